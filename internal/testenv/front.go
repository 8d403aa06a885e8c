package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FrontOptions choose how a Front behaves like the registries out there.
// The zero value is a plain TLS front.
type FrontOptions struct {
	// Latency is added before every request is handled (on the redirect
	// target too), as if the registry were that far away.
	Latency time.Duration
	// TagPageSize, when positive, serves tag lists in pages of at most that
	// many tags with RFC 5988 Link headers (rel="next") whose cursor is
	// opaque, as ECR does at 100: a client must follow the link, and one
	// that builds last=<tag> itself is refused.
	TagPageSize int
	// ExtraTags, when set, are tags the front's paged tag lists
	// (TagPageSize) name beside the registry's, as a registry without the
	// referrers API lists the tag schemas' sha256-<hex> tags of every
	// SBOM, signature and attestation: they name nothing (reading one is
	// the registry's 404).
	ExtraTags func(repo string) []string
	// DenyMissing, when 401 or 403, answers reads (GET, HEAD) in a
	// repository that does not exist upstream with that status and a
	// DENIED error, as GHCR does. A client holding a token that grants
	// push on the repository sees the registry's own answers, so pushes
	// can create repositories.
	DenyMissing int
	// Redirect sends blob downloads to another origin (RedirectTarget).
	Redirect RedirectMode
	// Faults script misbehaviour per request (see FaultRule); SetFaults
	// replaces them while the front runs.
	Faults []FaultRule
}

// RedirectMode names the origin a Front redirects blob downloads to.
type RedirectMode int

const (
	// NoRedirect serves blobs through the front.
	NoRedirect RedirectMode = iota
	// RedirectOtherPort redirects to https://localhost:OTHERPORT: the same
	// host name on another port (another origin, the same host for
	// cookie-style host matching).
	RedirectOtherPort
	// RedirectPlainHTTP redirects to http://localhost:OTHERPORT: another
	// scheme.
	RedirectPlainHTTP
	// RedirectOtherHost redirects to https://127.0.0.1:OTHERPORT: another
	// host name.
	RedirectOtherHost
)

// Front is a reverse proxy of ours between clients and a real registry,
// serving TLS (test CA) on loopback as localhost:PORT. It forwards the Host
// the client used, so the registry's upload and redirect URLs point back at
// the front, and keeps an access log of what clients asked.
type Front struct {
	// Host is "localhost:PORT", as clients name it.
	Host string
	// URL is https://Host.
	URL string
	// Upstream is the registry behind the front.
	Upstream *url.URL
	// Redirects is the redirect target of a front with Redirect set.
	Redirects *RedirectTarget

	opts      FrontOptions
	transport *http.Transport
	proxy     *httputil.ReverseProxy

	mu        sync.Mutex
	log       []AccessEntry
	script    *faultScript
	cursors   map[string]string // opaque cursor → last tag of the page before
	tickets   map[string]ticket // redirect target URL → the request it stands for
	existing  map[string]bool   // repositories known to exist upstream
	challenge *string           // upstream's /v2/ challenge, once asked

	upstreamRequests atomic.Int64
	// answeredRound is the highest Round among the requests answered so
	// far (see AccessEntry.Round).
	answeredRound atomic.Int64
}

// AccessEntry is one request a Front (or its redirect target) answered.
type AccessEntry struct {
	Time   time.Time
	Method string
	Path   string
	Query  string
	Status int    // 0 when the front never answered (hung, dropped)
	Auth   string // the Authorization scheme sent: "", "Basic", "Bearer"
	// Action is what the front did: "forwarded", "paged", "redirected",
	// "denied", "fault" (answered by a fault), "hung".
	Action string
	// Round is how many round trips a client needed, at least, before it
	// could send this request: one more than the highest Round of the
	// requests answered before it arrived. Requests sent together (a
	// parallel fan-out) share a Round; a request sent after reading an
	// answer has a higher one. With Latency set, the Rounds of a client's
	// requests count its sequential round trips.
	Round int
}

// String is the entry as a log line.
func (e AccessEntry) String() string {
	q := ""
	if e.Query != "" {
		q = "?" + e.Query
	}
	return fmt.Sprintf("%s %-10s %s %s%s -> %d (auth %q)", e.Time.Format("15:04:05.000"), e.Action, e.Method, e.Path, q, e.Status, e.Auth)
}

// ticket is what a redirect URL stands for: a blob request and the
// credentials it came with, kept on the server as a presigned URL's
// signature would be.
type ticket struct {
	path, host, authorization string
}

// StartFront starts a front for the registry at upstream (an http:// or
// https:// base URL; https upstreams must use the test CA); it stops when
// the test ends.
func StartFront(t testing.TB, upstream string, opts FrontOptions) *Front {
	t.Helper()
	ca := NewCA(t)
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		t.Fatalf("front upstream %q: want http(s)://host:port", upstream)
	}
	f := &Front{
		Upstream: u,
		opts:     opts,
		script:   newFaultScript(opts.Faults),
		cursors:  map[string]string{},
		tickets:  map[string]ticket{},
		existing: map[string]bool{},
		transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: ca.Pool},
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	t.Cleanup(f.transport.CloseIdleConnections)
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:      countingTransport{f},
		ModifyResponse: f.modifyResponse,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	l := listenLoopback(t)
	f.Host = loopbackHost(l)
	f.URL = "https://" + f.Host
	serveTLS(t, l, f)
	if opts.Redirect != NoRedirect {
		f.Redirects = startRedirectTarget(t, f, opts.Redirect)
	}
	return f
}

// StartFrontFor starts a front for a running registry.
func StartFrontFor(t testing.TB, reg *Registry, opts FrontOptions) *Front {
	t.Helper()
	return StartFront(t, reg.URL(), opts)
}

// SetFaults replaces the front's fault rules (and their counts).
func (f *Front) SetFaults(rules ...FaultRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = newFaultScript(rules)
}

// Log returns the access log so far.
func (f *Front) Log() []AccessEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]AccessEntry(nil), f.log...)
}

// ResetLog empties the access log and starts counting Rounds anew.
func (f *Front) ResetLog() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = nil
	f.answeredRound.Store(0)
}

// Rounds is the highest Round in the access log: the sequential round
// trips the requests since the last ResetLog took, at least.
func (f *Front) Rounds() int {
	n := 0
	for _, e := range f.Log() {
		n = max(n, e.Round)
	}
	return n
}

// answered raises answeredRound to round.
func (f *Front) answered(round int) {
	for {
		cur := f.answeredRound.Load()
		if int64(round) <= cur || f.answeredRound.CompareAndSwap(cur, int64(round)) {
			return
		}
	}
}

// Count counts the access log entries that match.
func (f *Front) Count(match func(AccessEntry) bool) int {
	n := 0
	for _, e := range f.Log() {
		if match(e) {
			n++
		}
	}
	return n
}

// UpstreamRequests counts the requests the front made to the registry:
// forwarded ones, existence probes, tag list and redirected blob fetches.
func (f *Front) UpstreamRequests() int64 { return f.upstreamRequests.Load() }

func (f *Front) record(e AccessEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, e)
}

func (f *Front) faults() *faultScript {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.script
}

// ServeHTTP handles one client request: latency, scripted faults, then
// denial, paging, redirects or forwarding.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w}
	entry := AccessEntry{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: authScheme(r),
		Round: int(f.answeredRound.Load()) + 1}
	defer func() {
		entry.Status = rec.status
		f.answered(entry.Round)
		f.record(entry)
	}()
	if !sleepCtx(r.Context(), f.opts.Latency) {
		entry.Action = "hung"
		return
	}
	fault := f.faults().next(r)
	if fault != nil && fault.Hang != 0 {
		if fault.Hang == HangUntilClientLeaves || !sleepCtx(r.Context(), fault.Hang) {
			<-r.Context().Done()
			entry.Action = "hung"
			return
		}
	}
	if fault != nil && fault.Status != 0 {
		entry.Action = "fault"
		writeFault(rec, fault)
		return
	}
	repo, rest := splitRepoPath(r.URL.Path)
	switch {
	case f.shouldDeny(r, repo, rest):
		entry.Action = "denied"
		f.deny(rec, r)
	case f.opts.TagPageSize > 0 && r.Method == http.MethodGet && rest == "tags/list":
		entry.Action = "paged"
		f.serveTagPage(rec, r, repo, fault)
	case f.Redirects != nil && MatchBlobGET(r):
		entry.Action = "redirected"
		f.redirect(rec, r)
	default:
		entry.Action = "forwarded"
		if fault != nil {
			r = r.WithContext(context.WithValue(r.Context(), faultKey{}, fault))
		}
		f.proxy.ServeHTTP(rec, r)
	}
}

// faultKey carries a request's Fault to modifyResponse.
type faultKey struct{}

// modifyResponse applies the request's Fault to the forwarded body.
func (f *Front) modifyResponse(resp *http.Response) error {
	fault, _ := resp.Request.Context().Value(faultKey{}).(*Fault)
	resp.Body = wrapBody(resp.Body, fault, resp.ContentLength)
	return nil
}

func writeFault(w http.ResponseWriter, fault *Fault) {
	for k, v := range fault.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(fault.Status)
	w.Write(fault.Body)
}

// repoPath splits an OCI distribution API path into repository and rest.
var repoPath = regexp.MustCompile(`^/v2/(.+)/(manifests/[^/]+|blobs/uploads/.*|blobs/[^/]+|tags/list|referrers/[^/]+)$`)

// splitRepoPath returns the repository an API path is about and the rest
// ("manifests/1.0.0", "blobs/sha256:…", "tags/list", …); "" for others.
func splitRepoPath(p string) (repo, rest string) {
	m := repoPath.FindStringSubmatch(p)
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}

// upstreamGET sends a GET of pathQuery to the registry as the front.
func (f *Front) upstreamGET(ctx context.Context, pathQuery, host, authorization string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.Upstream.Scheme+"://"+f.Upstream.Host+pathQuery, nil)
	if err != nil {
		return nil, err
	}
	req.Host = host
	req.Header.Set("X-Forwarded-Proto", "https")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return countingTransport{f}.RoundTrip(req)
}

// countingTransport counts the front's requests to the registry.
type countingTransport struct{ f *Front }

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.f.upstreamRequests.Add(1)
	return c.f.transport.RoundTrip(req)
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush lets the reverse proxy stream.
func (s *statusRecorder) Flush() {
	if fl, ok := s.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// authScheme is the scheme of the request's Authorization header.
func authScheme(r *http.Request) string {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return scheme
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// listenLoopback listens on a free loopback port.
func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// loopbackHost is how tests name a loopback listener: localhost:PORT.
func loopbackHost(l net.Listener) string {
	return fmt.Sprintf("localhost:%d", l.Addr().(*net.TCPAddr).Port)
}

// serveTLS serves h with the test CA's certificate on l until the test
// ends; Close also ends hanging requests.
func serveTLS(t testing.TB, l net.Listener, h http.Handler) {
	srv := &http.Server{
		Handler:   h,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{NewCA(t).ServerCert}},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
}

// serveHTTP serves h in plain HTTP on l until the test ends.
func serveHTTP(t testing.TB, l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}
