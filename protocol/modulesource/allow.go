package modulesource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// AllowList is the set of hosts a fetch may contact, as host:port
// (port 443 when not written).
type AllowList map[string]bool

// NewAllowList reads HOST or HOST:PORT entries.
func NewAllowList(hosts ...string) (AllowList, error) {
	a := AllowList{}
	for _, h := range hosts {
		k, err := origin.CanonicalHost(h)
		if err != nil {
			return nil, err
		}
		a[k] = true
	}
	return a, nil
}

// Allows reports whether u is an https URL on an allowed host.
func (a AllowList) Allows(u *url.URL) bool {
	if u == nil || u.Scheme != "https" || u.User != nil {
		return false
	}
	k, err := origin.CanonicalHost(u.Host)
	return err == nil && a[k]
}

// check refuses u unless allowed, naming it without its query.
func (a AllowList) check(u *url.URL) error {
	if a.Allows(u) {
		return nil
	}
	return fmt.Errorf("%w: %s is not on the allow-list of module origins and sources (https only)", ErrRefused, origin.RedactURL(u))
}

// guard is the transport of every request a fetch makes: each request,
// redirects included, is refused before any connection unless its URL
// is allowed, and response bodies count against one download budget.
type guard struct {
	next   http.RoundTripper
	allow  AllowList
	budget *budget
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.allow.check(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil || g.budget == nil {
		return resp, err
	}
	resp.Body = &budgetBody{ReadCloser: resp.Body, b: g.budget}
	return resp, nil
}

// budget bounds the bytes all responses of one fetch may carry.
type budget struct {
	left atomic.Int64
	max  int64
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.left.Store(max)
	return b
}

type budgetBody struct {
	io.ReadCloser
	b *budget
}

func (r *budgetBody) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if r.b.left.Add(-int64(n)) < 0 {
		return 0, fmt.Errorf("%w: the module source is larger than %d bytes", ErrRefused, r.b.max)
	}
	return n, err
}

// policyKey carries a fetch's guard to the git transport (git.go), which
// go-git installs once per process.
type policyKey struct{}

func withGuard(ctx context.Context, g *guard) context.Context {
	return context.WithValue(ctx, policyKey{}, g)
}

// ctxGuard is the git transport: the guard of the fetch the request
// belongs to; a request made outside a fetch is refused.
type ctxGuard struct{}

func (ctxGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	g, _ := req.Context().Value(policyKey{}).(*guard)
	if g == nil {
		return nil, fmt.Errorf("%w: git over HTTPS is only used by module fetches", ErrRefused)
	}
	return g.RoundTrip(req)
}
