package respond

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// Tickets: clients download archives without credentials, through the
// signed URLs documents hand out, and documents are cached for every
// client. So that the audit trail can still say who downloaded an
// archive, the signed URLs of a document end with a ticket naming the
// client the document was answered to — "&by=NAME.MAC", MAC an HMAC of
// the name under the URL signing key — spliced in as the document is
// written (like the base URL), and only when there is an audit trail.
// The ticket is not part of the URL's signature: it binds the name, not
// the path, so it costs one HMAC per client, not per URL. A holder of a
// client's URLs can present its ticket elsewhere, as they can present
// the URLs themselves; the trail then names the client the URLs were
// handed to, which is what it says.

// ticketMark stands for a signed URL's ticket in a document as it is
// built (cut out like BaseMark).
const ticketMark = "\x00oci-tofu-by\x00"

var (
	encodedTicketMark = encodedMark(ticketMark)
	// encodedMarkPrefix is what both marks start with, encoded.
	encodedMarkPrefix = encodedMark("\x00oci-tofu-")
)

func encodedMark(m string) []byte {
	b, _ := json.Marshal(m)
	return b[1 : len(b)-1]
}

// ticketFor is the ticket the signed URLs of an answer to w's request
// carry: empty without an audit trail (or fleet counts) naming
// clients, for a client with no name, or with a name no one verified
// (a registry that never asked for the credential): a ticket would
// record it as a name handed the URLs, without that mark.
func (s *Responder) ticketFor(w http.ResponseWriter) string {
	rec, ok := w.(*recorder)
	if !ok || rec.sinks == nil || !rec.sinks.tickets || rec.who.Client == "" || rec.who.Identity == audit.IdentityRegistryUnverified {
		return ""
	}
	return s.URLs.ticket(rec.who.Client)
}

// ticket is "&by=NAME.MAC" for client name, made once per name.
func (u *URLSigner) ticket(name string) string {
	if t, ok := u.tickets.Load(name); ok {
		return t.(string)
	}
	t := "&by=" + url.QueryEscape(name) + "." + u.ticketMAC(name)
	if u.ticketCount.Load() < maxTickets {
		if _, loaded := u.tickets.LoadOrStore(name, t); !loaded {
			u.ticketCount.Add(1)
		}
	}
	return t
}

// maxTickets bounds the tickets kept (registry users are not bounded by
// the policy file); past it they are made for each answer.
const maxTickets = 4096

func (u *URLSigner) ticketMAC(name string) string {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("oci-tofu handed to v1\n"))
	m.Write([]byte(name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// handedTo is who the signed URL with query q was handed to, by its
// ticket: "unknown" without one, or with one whose MAC is wrong.
func (u *URLSigner) handedTo(q url.Values) Who {
	who := Who{Client: "unknown", Identity: audit.IdentitySignedURL}
	by := q.Get("by")
	i := strings.LastIndexByte(by, '.') // a name may hold dots; the MAC none
	if i > 0 && hmac.Equal([]byte(by[i+1:]), []byte(u.ticketMAC(by[:i]))) {
		who.Client = by[:i]
	}
	return who
}

// tickets of a URLSigner: name → ticket.
type ticketMemo struct {
	tickets     sync.Map
	ticketCount atomic.Int64
}
