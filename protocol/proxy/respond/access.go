package respond

// Who may read what: a scoped client's Reader, carried in the request's
// context and asked before every answer, and the signed archive URLs
// that carry the client's ticket to downloads made without credentials.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Client scopes: a client that reads only some addresses (a Reader),
// carried in the request's context, and the check every handler makes
// before it answers for an address.

// A Reader is a client that reads only some addresses: a policy file's
// client (docs/policy.md "Clients"), or with the registry deciding, an
// identity of the registry's. A request of a client that reads
// everything (no client authentication, or a token of --auth-token-file)
// carries none.
type Reader interface {
	// Reads is nil when the client may read address (of kind); a
	// *source.NotFound saying why when it may not, whether or not the
	// address exists; another error when that could not be decided (a
	// registry failing).
	Reads(ctx context.Context, kind names.Kind, address string) error
}

// Verified is a Reader whose identity Reads may verify (a registry
// credential the registry accepts): Caller is then asked again, for the
// audit trail.
type Verified interface {
	Reader
	Caller() audit.Caller
}

// Vouched is a Reader whose credential someone else checks (a registry
// credential): Vouched reports whether it has been accepted. A listing
// asking about many addresses asks about one first, and about the rest
// only when that one may be read or the credential is then vouched for,
// so that a credential refused costs one check, not one per address.
type Vouched interface {
	Reader
	Vouched() bool
}

type readerKey struct{}

// WithReader is ctx carrying the client a request authenticated as.
func WithReader(ctx context.Context, c Reader) context.Context {
	return context.WithValue(ctx, readerKey{}, c)
}

// ReaderOf is the client a request authenticated as, when it reads only
// some addresses; nil otherwise.
func ReaderOf(ctx context.Context) Reader {
	c, _ := ctx.Value(readerKey{}).(Reader)
	return c
}

// InScope reports whether client c (nil: one reading everything) may
// read address (of kind); if not, it answers 404, as for an artifact
// that does not exist, so a scope does not tell which artifacts exist
// outside it.
func (s *Responder) InScope(w http.ResponseWriter, r *http.Request, c Reader, kind names.Kind, address string) bool {
	if c == nil {
		return true
	}
	err := c.Reads(r.Context(), kind, address)
	ev := EventOf(r.Context())
	if v, ok := c.(Verified); ok {
		ev.Identify(v.Caller())
	}
	if err != nil {
		if source.Absent(err) {
			ev.Refused(audit.OutcomeRefused, kind, address, "", err.Error())
		}
		s.Fail(w, r, err)
		return false
	}
	return true
}

// scopeMemo remembers the address a valid document key names (a key is
// its path, with the registry hostname for the registry protocols), so
// that a scoped client's warm request is checked against its scope
// without its path being parsed again. It holds at most maxScopeMemo
// keys; past that, paths are parsed each time.
type scopeMemo struct {
	m sync.Map // key → scopedAddress
	n atomic.Int64
}

const maxScopeMemo = 1 << 16

type scopedAddress struct {
	kind    names.Kind
	address string
}

func (m *scopeMemo) lookup(key string) (names.Kind, string, bool) {
	v, ok := m.m.Load(key)
	if !ok {
		return "", "", false
	}
	a := v.(scopedAddress)
	return a.kind, a.address, true
}

func (m *scopeMemo) remember(key string, kind names.Kind, address string) {
	if m.n.Load() >= maxScopeMemo {
		return
	}
	if _, loaded := m.m.LoadOrStore(key, scopedAddress{kind, address}); !loaded {
		m.n.Add(1)
	}
}

// Signed URLs: without client authentication archive URLs are plain;
// with it, documents hand them out signed and time-limited (URLSigner),
// carrying the ticket of the client they were handed to.

// URLSigner makes archive URLs unguessable and time-limited: clients send
// no credentials when downloading archives, so when client authentication
// is on, the metadata (which they fetch with credentials) hands out URLs
// carrying an HMAC of the path and an expiry time.
type URLSigner struct {
	key []byte
	ttl time.Duration
	Now func() time.Time
	ticketMemo
}

func (u *URLSigner) mac(path string, expires int64) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("oci-tofu archive v1\n"))
	m.Write([]byte(path))
	m.Write([]byte("\n"))
	m.Write([]byte(strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// sign returns the query string that authorises path until now+ttl.
func (u *URLSigner) sign(path string) string {
	expires := u.Now().Add(u.ttl).Unix()
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(expires, 10))
	q.Set("signature", base64.RawURLEncoding.EncodeToString(u.mac(path, expires)))
	return q.Encode()
}

// verify checks the signature and expiry of a request for path.
func (u *URLSigner) verify(path string, q url.Values) error {
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil {
		return StatusErr(http.StatusForbidden, nil, "this archive URL is not signed: request it again through the mirror or registry metadata")
	}
	sig, err := base64.RawURLEncoding.DecodeString(q.Get("signature"))
	if err != nil || !hmac.Equal(sig, u.mac(path, expires)) {
		return StatusErr(http.StatusForbidden, nil, "this archive URL's signature is invalid")
	}
	if u.Now().Unix() > expires {
		return StatusErr(http.StatusForbidden, nil, "this archive URL has expired: request it again through the mirror or registry metadata")
	}
	return nil
}

// NewURLSigner signs the URLs handed out with key; they are valid for
// ttl.
func NewURLSigner(key []byte, ttl time.Duration) *URLSigner {
	return &URLSigner{key: key, ttl: ttl, Now: time.Now}
}

// TicketBudgets are the policy file clients' budgets as the tickets of
// signed URLs spend them.
type TicketBudgets interface {
	// Spend spends a request of the client named name (none: nil), the
	// error to answer past its budget.
	Spend(name string) error
	// Budgets reports whether some client has a budget.
	Budgets() bool
}

// spendTicket spends, for a signed URL sent without a token, the budget
// of the client its ticket (of kind) names; without a ticket that
// verifies it refuses the URL while some client has a budget (the
// ticket left out to get around it).
func (s *Responder) spendTicket(who audit.Caller, kind string) error {
	if s.Tickets == nil {
		return nil
	}
	switch kind {
	case ticketClient:
		return s.Tickets.Spend(who.Client)
	case "":
		if s.Tickets.Budgets() {
			return StatusErr(http.StatusForbidden, nil, "this archive URL carries no valid ticket (by=): request it again through the mirror or registry metadata")
		}
	}
	return nil
}

// bearer is the client r's bearer token names (client authentication
// on): such a request needs no signed URL.
func (s *Responder) bearer(r *http.Request) (Reader, audit.Caller, bool, error) {
	if s.Bearer == nil || r.Header.Get("Authorization") == "" {
		return nil, audit.Caller{}, false, nil
	}
	return s.Bearer(r)
}

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
