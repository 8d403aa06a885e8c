package proxy

import (
	"net/http"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// Routing: the handlers Mount adds (the protocols) are found by prefix
// before the mux, which routes everything else (the page, probes,
// metrics, discovery, unknown paths).

// mounted is a handler Mount added (instrumented) and its prefix.
type mounted struct {
	prefix string
	h      http.Handler
}

// Mount serves h under prefix (which must end in "/"), instrumented with
// metrics and logs under the handler name. A non-empty serviceID
// advertises prefix in the discovery document, e.g. "modules.v1".
// Handlers that need client authentication wrap themselves with
// Authenticate.
func (s *Server) Mount(serviceID, prefix, name string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ih := s.instrument(name, h)
	s.mux.Handle(prefix, ih)
	var ps []mounted
	if old := s.prefixes.Load(); old != nil {
		ps = slices.Clone(*old)
	}
	ps = append(ps, mounted{prefix, ih})
	slices.SortStableFunc(ps, func(a, b mounted) int { return len(b.prefix) - len(a.prefix) })
	s.prefixes.Store(&ps)
	if serviceID != "" {
		s.services[serviceID] = prefix
	}
}

// ServeHTTP refuses paths with dot segments or empty segments before
// routing (http.ServeMux would otherwise redirect them to a cleaned path),
// then routes: a GET or HEAD below a mounted prefix straight to its
// handler, everything else through the mux.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	escaped := r.URL.EscapedPath()
	if err := respond.CheckPaths(escaped, r.URL.Path); err != nil {
		respond.WriteError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if m := s.mountedFor(r.Method, escaped); m != nil {
		r.Pattern = m.prefix
		m.h.ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// mountedFor is the handler Mount added for the longest prefix of a
// request's escaped path, for a GET or HEAD whose path goes on below it;
// nil otherwise:
// the handler the mux would choose, since the path is clean (respond.CheckRawPath:
// the mux would not redirect it) and the only patterns added beside
// Mount's are exact paths (the mirror's own prefix is the page's). A
// pattern below a mounted prefix must be added with Mount.
func (s *Server) mountedFor(method, path string) *mounted {
	if method != http.MethodGet && method != http.MethodHead {
		return nil
	}
	ps := s.prefixes.Load()
	if ps == nil {
		return nil
	}
	for i, m := range *ps {
		if strings.HasSuffix(m.prefix, "/") && len(path) > len(m.prefix) && strings.HasPrefix(path, m.prefix) {
			return &(*ps)[i]
		}
	}
	return nil
}

// instrument counts, times and logs the requests h serves under name,
// and recovers from its panics (respond.Metrics.Instrument).
func (s *Server) instrument(name string, h http.Handler) http.Handler {
	return s.metrics.Instrument(s.log, name, h)
}
