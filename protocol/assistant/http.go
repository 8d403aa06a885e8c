package assistant

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where serve --mcp answers Streamable HTTP.
const Path = "/mcp"

// maxRequestBody bounds a request's JSON-RPC message: the largest
// arguments a tool takes (20 providers to lock) are a few kilobytes.
const maxRequestBody = 64 << 10

// HTTPHandler serves srv over Streamable HTTP, stateless: every POST is
// one exchange, authenticated and scoped on its own (the handler the
// server wraps this in decides who asks), with no session a later
// request could ride on. A request whose Origin is neither the proxy's
// own nor one of origins is refused (a page in a browser must not reach
// the tools with the browser's network position).
func HTTPHandler(srv *mcp.Server, origins []string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: maxRequestBody})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) && !slices.Contains(origins, o) {
			http.Error(w, "Forbidden: the Origin "+clip(o)+" may not use this proxy's MCP endpoint (serve --mcp-allow-origin)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithRequestHost(r.Context(), r.Host)))
	})
}

// sameOrigin reports whether origin is the proxy as r reached it.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Path != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}
