package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
)

// BenchmarkWarmVersionPolicy is the handler's share of a warm
// <version>.json (the document cache's answer), in process, without
// TLS or sockets: without a policy, with 1,000 rules, and with 1,000
// rules after a reload (the cache key then names the generation).
// make bench measures whole requests (bench/policy_test.go); this
// shows what the policy costs the handler itself.
func BenchmarkWarmVersionPolicy(b *testing.B) {
	dir, open := layoutStore(b)
	repo := open("test", "hello")
	push(b, repo, releaseArtifact(b, "1.0.0"), "1.0.0")
	var src strings.Builder
	for i := 0; i < 999; i++ {
		fmt.Fprintf(&src, "provider \"example.com/other%d/*\" {}\n", i)
	}
	src.WriteString("provider \"example.com/*/*\" { deny = [\"9.0.0\"] }\n")
	pol, err := policy.Parse([]byte(src.String()), "p.hcl")
	if err != nil {
		b.Fatal(err)
	}
	reloaded := policy.NewLive(pol)
	reloaded.Replace(pol)
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		live *policy.Live
	}{{"none", nil}, {"1000-rules", policy.NewLive(pol)}, {"1000-rules-reloaded", reloaded}} {
		s, err := New(Options{Client: client, ProviderMappings: mustMapping(b, "oci-layout:"+dir+"/${namespace}/${type}"),
			Policy: c.live, Logger: slog.New(slog.DiscardHandler), PublicURL: "https://proxy.example"})
		if err != nil {
			b.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/v1/mirror/example.com/test/hello/1.0.0.json", nil)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", c.name, w.Code, w.Body)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
