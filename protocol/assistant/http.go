package assistant

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
		if r.Method == http.MethodPost && !oneMessage(w, r) {
			return
		}
		h.ServeHTTP(w, r.WithContext(withReadCount(WithRequestHost(r.Context(), r.Host))))
	})
}

// oneMessage reads r's body (at most maxRequestBody bytes, then put
// back) and refuses a JSON-RPC batch (400): the SDK still takes one from
// a client of protocol versions before 2025-06-18, and a POST of
// hundreds of tool calls would spend one request of the caller's
// budget. It reports whether r may go on.
func oneMessage(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		http.Error(w, fmt.Sprintf("Request Entity Too Large: a message is at most %d bytes", maxRequestBody), http.StatusRequestEntityTooLarge)
		return false
	}
	if err != nil {
		http.Error(w, "Bad Request: reading the message: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		http.Error(w, "Bad Request: JSON-RPC batches are not accepted: send one message a request", http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
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
