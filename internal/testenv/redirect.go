package testenv

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// RedirectTarget stands in for the storage a registry redirects blob
// downloads to (S3, a CDN): another origin that serves the blob by a
// presigned-style URL and records every request's headers, so tests can
// assert that credentials never arrive there. Like S3 with a presigned
// URL, it refuses requests that also carry an Authorization header.
type RedirectTarget struct {
	// URL is the target's base URL (scheme://host:port).
	URL string

	front    *Front
	mu       sync.Mutex
	requests []RecordedRequest
}

// RecordedRequest is one request as the redirect target received it.
type RecordedRequest struct {
	Method string
	Path   string
	Header http.Header
}

// startRedirectTarget listens for f's redirected downloads on another
// origin, as mode says.
func startRedirectTarget(t testing.TB, f *Front, mode RedirectMode) *RedirectTarget {
	t.Helper()
	rt := &RedirectTarget{front: f}
	l := listenLoopback(t)
	port := l.Addr().(*net.TCPAddr).Port
	switch mode {
	case RedirectOtherPort:
		rt.URL = fmt.Sprintf("https://localhost:%d", port)
		serveTLS(t, l, rt)
	case RedirectPlainHTTP:
		rt.URL = fmt.Sprintf("http://localhost:%d", port)
		serveHTTP(t, l, rt)
	case RedirectOtherHost:
		rt.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
		serveTLS(t, l, rt)
	default:
		t.Fatalf("unknown redirect mode %d", mode)
	}
	return rt
}

// Requests returns the requests received so far.
func (rt *RedirectTarget) Requests() []RecordedRequest {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]RecordedRequest(nil), rt.requests...)
}

// WithAuthorization returns the received requests that carried an
// Authorization header: credentials that leaked to another origin.
func (rt *RedirectTarget) WithAuthorization() []RecordedRequest {
	var out []RecordedRequest
	for _, r := range rt.Requests() {
		if r.Header.Get("Authorization") != "" {
			out = append(out, r)
		}
	}
	return out
}

// redirect answers a blob download with a 307 to the redirect target.
func (f *Front) redirect(w http.ResponseWriter, r *http.Request) {
	id := randomHex(16)
	f.mu.Lock()
	f.tickets[id] = ticket{path: r.URL.Path, host: r.Host, authorization: r.Header.Get("Authorization")}
	f.mu.Unlock()
	_, rest := splitRepoPath(r.URL.Path)
	w.Header().Set("Location", fmt.Sprintf("%s/storage/%s/%s?X-Signature=%s", f.Redirects.URL, id, strings.TrimPrefix(rest, "blobs/"), id))
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// ServeHTTP records the request and serves the blob its ticket names,
// fetched from the registry with the credentials of the redirected request.
func (rt *RedirectTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := rt.front
	rec := &statusRecorder{ResponseWriter: w}
	entry := AccessEntry{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: authScheme(r), Action: "storage"}
	defer func() {
		entry.Status = rec.status
		f.record(entry)
	}()
	rt.mu.Lock()
	rt.requests = append(rt.requests, RecordedRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
	rt.mu.Unlock()
	if !sleepCtx(r.Context(), f.opts.Latency) {
		return
	}
	if r.Header.Get("Authorization") != "" {
		http.Error(rec, "InvalidArgument: Only one auth mechanism allowed; the signature is in the URL and an Authorization header was sent", http.StatusBadRequest)
		return
	}
	id := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/storage/"), "/", 2)[0]
	f.mu.Lock()
	tk, ok := f.tickets[id]
	f.mu.Unlock()
	if !ok || r.URL.Query().Get("X-Signature") != id || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.Error(rec, "AccessDenied", http.StatusForbidden)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, f.Upstream.Scheme+"://"+f.Upstream.Host+tk.path, nil)
	if err != nil {
		http.Error(rec, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Host = tk.host
	if tk.authorization != "" {
		req.Header.Set("Authorization", tk.authorization)
	}
	if rg := r.Header.Get("Range"); rg != "" {
		req.Header.Set("Range", rg)
	}
	resp, err := countingTransport{f}.RoundTrip(req)
	if err != nil {
		http.Error(rec, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, k := range []string{"Content-Length", "Content-Type", "Content-Range", "Accept-Ranges", "Etag", "Docker-Content-Digest"} {
		if v := resp.Header.Get(k); v != "" {
			rec.Header().Set(k, v)
		}
	}
	rec.WriteHeader(resp.StatusCode)
	io.Copy(rec, resp.Body)
}
