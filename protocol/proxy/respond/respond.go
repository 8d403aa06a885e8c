// Package respond is what every protocol handler of the proxy answers
// with: the request prologue (GET or HEAD, the cached document asked
// first, handed-out URLs' signatures, the path parsed), errors mapped to
// statuses in one switch, the document cache, the URLs documents hand
// out, verified blob delivery (streamed, pipelined over HTTP/2, or
// redirected to storage), instrumentation, and the Observer told what
// was served. It knows sources only through their model values and
// typed errors (protocol/source); it never composes them.
package respond

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Options are the settings of the server the responder answers for.
type Options struct {
	// RegistryHostname is the ${hostname} of the registry protocols;
	// empty: the request's host.
	RegistryHostname string
	// PublicURL is the base of the URLs handed out (empty: the
	// request's, or relative URLs).
	PublicURL string
	// TagTTL is how long a document is fresh from when its data was
	// read; MaxStale how long after that it is served while being
	// rebuilt; FailureTTL how long a failure is remembered (its
	// Retry-After).
	TagTTL, MaxStale, FailureTTL time.Duration
	// ArchiveURLTTL is how long signed URLs are valid.
	ArchiveURLTTL time.Duration
	// StallTimeout aborts a blob stream that makes no progress.
	StallTimeout time.Duration
	// RedirectArchives hands out the storage URL a registry redirects a
	// blob's download to.
	RedirectArchives bool
	// Hint says what the operator can do about an upstream failure
	// (logged, never sent).
	Hint func(error) string
	// Policy is the policy file in force (its generation keys
	// documents); Now the clock of time-bound decisions.
	Policy *policy.Live
	Now    func() time.Time
}

// How a provider was served, as an Observer is told.
const (
	ViaMirror   = "network mirror"
	ViaRegistry = "registry protocol"
)

// Observer is told what was served: the page keeps its record of it.
// Handlers tell it what their documents listed; the responder tells it
// the upstream failures it answered and the policy's denials.
type Observer interface {
	ProviderListed(address, via string, versions names.VersionList)
	ProviderVersion(address, via string, v names.Version, platforms []names.Platform, signed bool)
	ModuleListed(address string, versions []string)
	TofuListed(versions []string)
	UpstreamFailure(class, what string)
	PolicyDenied(kind names.Kind, address string, v names.Version, d policy.Decision, fromFacts bool)
}

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
	if err := c.Reads(r.Context(), kind, address); err != nil {
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
