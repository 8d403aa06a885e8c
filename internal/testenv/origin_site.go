package testenv

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// site is a static HTTPS site serving a directory, as test origins are:
// an access log of every request, a simulated network (latency before each
// answer, a per-connection bandwidth cap), and Stop/Start to take it down
// and bring it back on the same port.
type site struct {
	mu      sync.Mutex
	log     []OriginRequest
	srv     *http.Server
	addr    string
	handler http.Handler
	tls     *tls.Config
	stopped bool
}

// OriginRequest is one request a test origin received.
type OriginRequest struct {
	Method, Path string
	// Authorization is the Authorization header's scheme and whether one
	// was sent ("" when none), never the credential itself.
	Authorization string
	Time          time.Time
}

// serve starts the site on l, serving root.
func (s *site) serve(t testing.TB, l net.Listener, root string, opts OriginOptions) {
	fs := http.FileServer(http.Dir(root))
	s.serveHandler(t, l, opts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/files/") {
			w.Header().Set("Content-Type", "application/json")
		}
		fs.ServeHTTP(w, r)
	}))
}

// serveHandler starts the site on l, answering with h after recording
// each request and simulating the network.
func (s *site) serveHandler(t testing.TB, l net.Listener, opts OriginOptions, h http.Handler) {
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		time.Sleep(opts.Latency)
		if opts.BytesPerSecond > 0 {
			w = &throttled{ResponseWriter: w, rate: opts.BytesPerSecond, start: time.Now()}
		}
		h.ServeHTTP(w, r)
	})
	s.tls = &tls.Config{Certificates: []tls.Certificate{NewCA(t).ServerCert}}
	s.addr = l.Addr().String()
	s.start(l)
	t.Cleanup(s.Stop)
}

func (s *site) start(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv = &http.Server{Handler: s.handler, TLSConfig: s.tls}
	s.stopped = false
	go s.srv.ServeTLS(l, "", "")
}

func (s *site) record(r *http.Request) {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, OriginRequest{Method: r.Method, Path: r.URL.Path, Authorization: scheme, Time: time.Now()})
}

// Requests returns the requests received so far, in order.
func (s *site) Requests() []OriginRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OriginRequest(nil), s.log...)
}

// Count is how many requests (any method) had a path for which match is
// true.
func (s *site) Count(match func(path string) bool) int {
	n := 0
	for _, r := range s.Requests() {
		if match(r.Path) {
			n++
		}
	}
	return n
}

// ResetLog forgets the requests received so far.
func (s *site) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// Stop takes the site down: connections are closed and new ones refused
// until Start.
func (s *site) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.srv == nil {
		return
	}
	s.stopped = true
	s.srv.Close()
}

// Start brings a stopped site back on the same address.
func (s *site) Start(t testing.TB) {
	t.Helper()
	var l net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if l, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("restarting the origin on %s: %v", s.addr, err)
	}
	s.start(l)
}

// Tamper replaces a published file (a path below the origin's root, e.g.
// files/test/hello/terraform-provider-hello_1.0.0_linux_amd64.zip) with
// what change makes of it.
func (o *Origin) Tamper(t testing.TB, rel string, change func([]byte) []byte) {
	t.Helper()
	tamper(t, o.Root, rel, change)
}

func tamper(t testing.TB, root, rel string, change func([]byte) []byte) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, change(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ProvidersURL is the origin's providers.v1 base URL, for configurations
// that name it instead of discovering it.
func (o *Origin) ProvidersURL() string { return fmt.Sprintf("https://%s/v1/providers/", o.Host) }

// TofuOrigin is a static TofuDL origin over TLS: api.json listing the
// releases and their files under /files/v<version>/, as OpenTofu's own
// download site lays them out.
type TofuOrigin struct {
	Host string // localhost:PORT
	Root string
	site
}

// APIURL and DownloadTemplate are what a TofuDL client (or a mirror) is
// configured with.
func (o *TofuOrigin) APIURL() string { return "https://" + o.Host + "/api.json" }

func (o *TofuOrigin) DownloadTemplate() string {
	return "https://" + o.Host + "/files/v{{ .Version }}/{{ .Artifact }}"
}

// Tamper replaces a release file (files/v<version>/<name>).
func (o *TofuOrigin) Tamper(t testing.TB, rel string, change func([]byte) []byte) {
	t.Helper()
	tamper(t, o.Root, rel, change)
}

// StartTofuOrigin publishes OpenTofu release directories (as in
// testdata/tofu/<version>, given oldest first) and serves them until the
// test ends. The api.json is written from the format's field names,
// newest first.
func StartTofuOrigin(t testing.TB, dirs []string, opts OriginOptions) *TofuOrigin {
	t.Helper()
	root := t.TempDir()
	o := &TofuOrigin{Root: root}
	l := listenLoopback(t)
	o.Host = loopbackHost(l)
	type version struct {
		ID    string   `json:"id"`
		Files []string `json:"files"`
	}
	var versions []version
	for _, dir := range dirs {
		v := filepath.Base(dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(root, "files", "v"+v)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, e.Name())
		}
		versions = append([]version{{ID: v, Files: files}}, versions...)
	}
	writeJSONFile(t, filepath.Join(root, "api.json"), map[string]any{"versions": versions})
	o.serve(t, l, root, opts)
	return o
}

func writeJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
