package respond

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// Tickets: clients download archives without credentials, through the
// signed URLs documents hand out, and documents are cached for every
// client. So that the audit trail can still say who downloaded an
// archive, and a client's budget bound its downloads too, the signed
// URLs of a document end with a ticket naming who the document was
// answered to — "&by=NAME.MAC", MAC an HMAC under the URL signing key of
// the name and its kind (a policy file client, or another caller: an
// operator, a registry user), so a registry user named like a client
// does not hold that client's ticket — spliced in as the document is
// written (like the base URL), whenever there is an audit trail (or
// fleet counts) or client authentication. The ticket is not part of the
// URL's signature: it binds the name, not the path, so it costs one HMAC
// per client, not per URL. A holder of a client's URLs can present its
// ticket elsewhere, as they can present the URLs themselves; the trail
// then names the client the URLs were handed to, which is what it says,
// and the download spends that client's budget. While some client has a
// budget, a signed URL sent without a token needs a ticket that
// verifies, so that leaving the ticket out is no way around the budget.

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

// ticketFor is the ticket the signed URLs of an answer to the request
// of ctx carry: empty without tickets (no audit trail, fleet counts or
// client authentication) or for a caller with no name. A name no one
// verified (a registry that never asked for the credential) gets a
// ticket naming no one: a ticket naming it would record it as a name
// handed the URLs, without that mark.
func (s *Responder) ticketFor(ctx context.Context) string {
	who, ok := EventOf(ctx).ticketed()
	if !ok {
		return ""
	}
	switch who.Identity {
	case audit.IdentityRegistryUnverified:
		return s.URLs.ticket(ticketOther, "")
	case audit.IdentityClient, audit.IdentityOIDC:
		return s.URLs.ticket(ticketClient, who.Client)
	}
	return s.URLs.ticket(ticketOther, who.Client)
}

// The kinds of caller a ticket names, covered by its MAC.
const (
	ticketClient = "client" // a policy file client: its budget applies
	ticketOther  = "other"  // an operator, a registry user, or no one
)

// ticket is "&by=NAME.MAC" for a caller of kind named name, made once
// per name and kind.
func (u *URLSigner) ticket(kind, name string) string {
	key := kind + "\n" + name
	if t, ok := u.tickets.Load(key); ok {
		return t.(string)
	}
	t := "&by=" + url.QueryEscape(name) + "." + u.ticketMAC(kind, name)
	if u.ticketCount.Load() < maxTickets {
		if _, loaded := u.tickets.LoadOrStore(key, t); !loaded {
			u.ticketCount.Add(1)
		}
	}
	return t
}

// maxTickets bounds the tickets kept (registry users are not bounded by
// the policy file); past it they are made for each answer.
const maxTickets = 4096

func (u *URLSigner) ticketMAC(kind, name string) string {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("oci-tofu handed to v2\n"))
	m.Write([]byte(kind))
	m.Write([]byte("\n"))
	m.Write([]byte(name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// handedTo is who the signed URL with query q was handed to, by its
// ticket: "unknown" without one, with one whose MAC is wrong, or one
// naming no one; kind is the ticket's kind, "" when none verifies.
func (u *URLSigner) handedTo(q url.Values) (who audit.Caller, kind string) {
	who = audit.Caller{Client: "unknown", Identity: audit.IdentitySignedURL}
	by := q.Get("by")
	i := strings.LastIndexByte(by, '.') // a name may hold dots; the MAC none
	if i < 0 {
		return who, ""
	}
	name, mac := by[:i], []byte(by[i+1:])
	for _, k := range [...]string{ticketClient, ticketOther} {
		if hmac.Equal(mac, []byte(u.ticketMAC(k, name))) {
			if name != "" {
				who.Client = name
			}
			return who, k
		}
	}
	return who, ""
}

// tickets of a URLSigner: name → ticket.
type ticketMemo struct {
	tickets     sync.Map
	ticketCount atomic.Int64
}
