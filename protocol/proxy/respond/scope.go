package respond

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

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
