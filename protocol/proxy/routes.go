package proxy

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	if err := checkPaths(escaped, r.URL.Path); err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
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
// the handler the mux would choose, since the path is clean (checkRawPath:
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

// checkRawPath refuses a path, escaped or not, that is too long, not
// absolute, or has dot segments or empty segments.
func checkRawPath(u *url.URL) error { return checkPaths(u.EscapedPath(), u.Path) }

// checkPaths is checkRawPath of a path's escaped and unescaped forms.
func checkPaths(escaped, path string) error {
	if err := checkPathSegments(escaped); err != nil || path == escaped {
		return err
	}
	return checkPathSegments(path)
}

func checkPathSegments(p string) error {
	if len(p) > MaxPathLen {
		return BadPath("path longer than %d bytes", MaxPathLen)
	}
	if !strings.HasPrefix(p, "/") {
		return BadPath("path must be absolute")
	}
	for rest := p[1:]; ; {
		seg, after, more := strings.Cut(rest, "/")
		if isDotSegment(seg) {
			return BadPath("dot segments are not allowed in paths")
		}
		if !more {
			break
		}
		if seg == "" {
			return BadPath("empty path segment")
		}
		rest = after
	}
	return nil
}

// isDotSegment says whether seg is ".", "..", or either with its dots
// escaped ("%2e", "%2E%2e", …). Most segments are longer than six bytes
// or start with neither '.' nor '%', and are told at once.
func isDotSegment(seg string) bool {
	if len(seg) == 0 || len(seg) > 6 || seg[0] != '.' && seg[0] != '%' {
		return false
	}
	return seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e")
}
