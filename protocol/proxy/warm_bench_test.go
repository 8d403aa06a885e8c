package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
)

// mustParsePolicy parses a policy file's source.
func mustParsePolicy(b testing.TB, src string) *policy.Policy {
	b.Helper()
	p, err := policy.Parse([]byte(src), "policy.hcl")
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkWarmVersion is the handler chain's share of a warm
// <version>.json (Server.ServeHTTP down to the document cache's answer),
// in process, without sockets: with a public URL, and with the base taken
// from each request's Host as when the proxy terminates TLS itself (the
// default of `oci-tofu serve`), and asked by a client of the policy file
// (its token checked, its scope checked). The response writer keeps only the
// headers and counts the bytes, so what is measured is the proxy's own
// work (make bench measures whole requests: bench/proxy_test.go).
func BenchmarkWarmVersion(b *testing.B) {
	dir, open := layoutStore(b)
	push(b, open("test", "hello"), releaseArtifact(b, "1.0.0"), "1.0.0")
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const token = "bench-client-token-0123456789"
	clients := policy.NewLive(mustParsePolicy(b, fmt.Sprintf("client \"bench\" {\n  tokens = [%q]\n  providers = [\"example.com/test/*\"]\n}\n", policy.TokenHash(token))))
	for _, c := range []struct {
		name, publicURL string
		policy          *policy.Live
		logger          *slog.Logger
	}{{"public-url", "https://proxy.example", nil, nil}, {"tls-host", "", nil, nil}, {"scoped-client", "", clients, nil},
		{"default-log", "", nil, pipeLogger(b)}} {
		logger := c.logger
		if logger == nil {
			logger = slog.New(slog.DiscardHandler)
		}
		s, err := New(Options{Client: client, ProviderMappings: mustMapping(b, "oci-layout:"+dir+"/${namespace}/${type}"),
			Logger: logger, PublicURL: c.publicURL, Policy: c.policy})
		if err != nil {
			b.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/v1/mirror/example.com/test/hello/1.0.0.json", nil)
		req.Host = "proxy.example:8443"
		req.TLS = &tls.ConnectionState{}
		if c.policy != nil {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", c.name, w.Code, w.Body)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			d := &discardWriter{h: http.Header{}}
			cpu := processCPU(b)
			for i := 0; i < b.N; i++ {
				clear(d.h)
				s.ServeHTTP(d, req)
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			if d.n != int64(w.Body.Len())*int64(b.N) {
				b.Fatalf("wrote %d bytes in %d answers of %d", d.n, b.N, w.Body.Len())
			}
		})
	}
}

// pipeLogger is serve's logger at its defaults, writing to a pipe
// drained as a container runtime drains a process's log.
func pipeLogger(b *testing.B) *slog.Logger {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go io.Copy(io.Discard, r)
	logger, lines, err := NewLogger(w, "text", "info")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lines.Close(); w.Close(); r.Close() })
	return logger
}

// processCPU is the CPU time the process has used (all threads, the
// collector's too): on a shared machine a steadier measure than ns/op.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discardWriter is a ResponseWriter that keeps the headers and counts
// the body's bytes.
type discardWriter struct {
	h http.Header
	n int64
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(int)     {}
func (d *discardWriter) Write(b []byte) (int, error) {
	d.n += int64(len(b))
	return len(b), nil
}
