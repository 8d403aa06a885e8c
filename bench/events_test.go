package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
)

// BenchmarkEvents measures what outbound events (serve --events-file,
// docs/events.md) cost the hottest answer, a warm <version>.json, against
// the same binary without them [goal: ≥ 0.98 of its requests per
// second]. Both sides serve one registry's provider with the same policy
// (a deprecated block for the version asked, so the events side sent a
// policy.deprecated at start and a policy.warned when it built the
// document), the events side with a subscription to a local receiver
// answering 204. The sides take turns in rotating order, 2 s of wrk each
// (OCI_TOFU_BENCH_ROUNDS rounds, default 6); each figure is the median of
// its rounds, requests per second and the process's CPU time per answer.
func BenchmarkEvents(b *testing.B) {
	wrk := lookWrk(b)
	reg := testenv.StartRegistry(b)
	proxyPushBigProvider(b, reg, "bench/acme/big", 1<<10)
	bin := buildOCITofu(b)
	dir := b.TempDir()
	policyFile := filepath.Join(dir, "policy.hcl")
	writeBenchFile(b, policyFile, "provider \"example.com/acme/big\" {\n  deprecated {\n    versions = \"1.0.0\"\n    message  = \"use 2.x\"\n  }\n}\n")
	var received atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(receiver.Close)
	eventsFile := filepath.Join(dir, "events.yaml")
	writeBenchFile(b, eventsFile, fmt.Sprintf("subscriptions:\n- name: bench\n  url: %s/hook\n  secrets: [%s]\n", receiver.URL, webhook.NewSecret()))

	plain := startJSONProxy(b, bin, reg, "--policy", policyFile, "--registry-hostname", "example.com")
	plain.name = "plain"
	withEvents := startJSONProxy(b, bin, reg, "--policy", policyFile, "--registry-hostname", "example.com", "--events-file", eventsFile)
	withEvents.name = "events"
	sides := []*jsonSide{withEvents, plain}
	client := proxyClient(reg.CA)
	versionPath := "/v1/mirror/example.com/acme/big/1.0.0.json"
	for _, s := range sides {
		proxyGet(b, client, s.url+versionPath) // warm
	}
	rounds := 6
	if n, err := strconv.Atoi(os.Getenv("OCI_TOFU_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for k := range sides {
				sides[(r+k)%len(sides)].measure(b, wrk, versionPath)
			}
		}
	}
	b.StopTimer()
	if received.Load() == 0 {
		b.Fatal("the receiver got no event: the events side sent none")
	}
	for _, s := range sides {
		b.Logf("%s: req/s %.0f, CPU µs per answer %.1f", s.name, s.rps, s.usPA)
		b.ReportMetric(median(s.rps), s.name+"-req/s")
		b.ReportMetric(median(s.usPA), s.name+"-cpu-µs/answer")
	}
	b.ReportMetric(median(withEvents.rps)/median(plain.rps), "json-events/plain")
	b.ReportMetric(median(withEvents.usPA)/median(plain.usPA), "cpu-events/plain")
	b.ReportMetric(float64(received.Load()), "events-received")
	b.ReportMetric(0, "ns/op")
}

// lookWrk is wrk's path; the benchmark is skipped without it.
func lookWrk(b *testing.B) string {
	b.Helper()
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk; bench/proxy.sh does)")
	}
	return wrk
}

// writeBenchFile writes content to path.
func writeBenchFile(b *testing.B, path, content string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}
