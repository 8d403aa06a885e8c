package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Shape of the metadata benchmark (issue 10): one provider with 500
// versions × 4 platforms, signed, in a registry 40 ms away, and 50 such
// providers for the memory figure.
const (
	distanceVersions  = 500
	distanceProviders = 50
	distanceOneWay    = 20 * time.Millisecond
	// distanceTTL is the proxy's --tag-ttl and --resolve-ttl here, short
	// so the after-TTL figure can be measured.
	distanceTTL = 3 * time.Second
)

// BenchmarkMetadataDistance measures the proxy's metadata answers for a
// large provider in a registry at a distance, beside one round trip of a
// static file through the same distance (the goals in brackets):
//
//   - cold /versions (the registry protocol's listing: the tag list, then
//     every version's index) on a proxy that never saw the provider [< 1 s;
//     tofu's registry client gives up after 10 s];
//   - the registry requests one cold /versions makes [≤ versions + a few];
//   - warm /versions, and /versions after the TTLs passed [equal to warm:
//     stale documents are served while one background read revalidates];
//   - cold index.json and <version>.json in round trips [≤ 3 each];
//   - the proxy's RSS with 50 such providers listed and cached.
//
// The registry is CNCF Distribution v3 behind a TCP delay front (20 ms
// each way), its requests counted in its own access log; the proxy is the
// real binary. The providers are one pushed repository (seeded with the
// code `push provider` runs) and 49 aliases of its storage: distinct
// repositories to the proxy and the registry, each of the same provider
// type in a namespace of its own (the proxy refuses a release whose type
// is not the one its address names).
func BenchmarkMetadataDistance(b *testing.B) {
	reg := testenv.StartRegistryWithAccessLog(b)
	bin := buildOCITofu(b)
	seedStart := time.Now()
	seed.SignedProvider(b, reg, "bench/acme0/big", distanceVersions)
	b.Logf("seeded %d versions × %d platforms in %v", distanceVersions, len(seed.Platforms), time.Since(seedStart).Round(time.Millisecond))
	for i := 1; i < distanceProviders; i++ {
		reg.AliasRepository(b, "bench/acme0/big", fmt.Sprintf("bench/acme%d/big", i))
	}
	far := testenv.StartDelayFront(b, "127.0.0.1"+reg.Host[strings.LastIndex(reg.Host, ":"):], distanceOneWay)

	// The reference: a static file through the same distance.
	static := filepath.Join(b.TempDir(), "versions.json")
	os.WriteFile(static, []byte(`{"versions":[]}`), 0o644)
	staticURL := far.ServeFile(b, static)
	client := proxyClient(reg.CA)
	coldRTT := timeGet(b, client, staticURL) // new connection: TCP, TLS, GET
	var rtts []float64
	for i := 0; i < 10; i++ {
		rtts = append(rtts, timeGet(b, client, staticURL).Seconds())
	}
	rtt := median(rtts)

	proxyURL, cmd := serveProcess(b, bin, reg.CA, "--provider-template", far.Host+"/bench/${namespace}/${type}",
		"--tag-ttl", distanceTTL.String(), "--resolve-ttl", distanceTTL.String())
	versions := func(i int) string { return fmt.Sprintf("%s/v1/providers/acme%d/big/versions", proxyURL, i) }
	mirror := func(i int, doc string) string {
		return fmt.Sprintf("%s/v1/mirror/registry.opentofu.org/acme%d/big/%s", proxyURL, i, doc)
	}
	next := 0
	fresh := func() int { next++; return next - 1 }

	b.ResetTimer()
	// The very first /versions: cold caches and no connection to the registry yet.
	first, firstReqs := countedGet(b, client, reg, versions(fresh()))
	var cold, reqs []float64
	for r := 0; r < 5; r++ {
		d, n := countedGet(b, client, reg, versions(fresh()))
		cold, reqs = append(cold, d.Seconds()), append(reqs, float64(n))
	}
	warmProvider := next - 1
	var warm []float64
	for r := 0; r < 20; r++ {
		warm = append(warm, timeGet(b, client, versions(warmProvider)).Seconds())
	}
	// After the TTLs: the first request of each expiry, and the ones that
	// follow while the background read runs.
	var stale []float64
	for r := 0; r < 3; r++ {
		time.Sleep(distanceTTL + 500*time.Millisecond)
		for k := 0; k < 5; k++ {
			stale = append(stale, timeGet(b, client, versions(warmProvider)).Seconds())
		}
	}
	// Cold documents, each from a provider the proxy has not read, once
	// the background revalidations above are over.
	waitQuiet(reg)
	var idx, ver, dl []float64
	for r := 0; r < 5; r++ {
		idx = append(idx, timeGet(b, client, mirror(fresh(), "index.json")).Seconds())
		ver = append(ver, timeGet(b, client, mirror(fresh(), seed.Version(distanceVersions/2)+".json")).Seconds())
		dl = append(dl, timeGet(b, client, fmt.Sprintf("%s/v1/providers/acme%d/big/%s/download/linux/amd64", proxyURL, fresh(), seed.Version(7))).Seconds())
	}
	b.StopTimer()
	// Memory: every provider listed and cached.
	for i := next; i < distanceProviders; i++ {
		timeGet(b, client, versions(i))
	}
	for i := 0; i < distanceProviders; i++ {
		timeGet(b, client, versions(i))
	}
	status := testenv.ProcStatus(b, cmd.Process.Pid)
	rss, hwm := float64(status["VmRSS"])/1024, float64(status["VmHWM"])/1024
	heap := metricValue(b, client, proxyURL+"/metrics", "go_memstats_heap_inuse_bytes") / (1 << 20)

	b.Logf("static file through the delay: %.1f ms (new connection %.1f ms)", rtt*1000, coldRTT.Seconds()*1000)
	b.Logf("first cold /versions %v (%d registry requests); cold %v; requests %v",
		first.Round(time.Millisecond), firstReqs, cold, reqs)
	b.Logf("warm %v", warm)
	b.Logf("after TTL %v", stale)
	b.Logf("cold index.json %v; <version>.json %v; download %v", idx, ver, dl)
	b.ReportMetric(rtt*1000, "static-rtt-ms")
	b.ReportMetric(first.Seconds()*1000, "first-cold-versions-ms")
	b.ReportMetric(median(cold)*1000, "cold-versions-ms")
	b.ReportMetric(median(cold)/rtt, "cold-versions/rtt")
	b.ReportMetric(median(reqs), "cold-versions-requests")
	b.ReportMetric(median(warm)*1000, "warm-versions-ms")
	b.ReportMetric(median(stale)*1000, "after-ttl-versions-ms")
	b.ReportMetric(maxOf(stale)*1000, "after-ttl-versions-max-ms")
	b.ReportMetric(median(idx)/rtt, "cold-index.json-rtts")
	b.ReportMetric(median(ver)/rtt, "cold-version.json-rtts")
	b.ReportMetric(median(dl)/rtt, "cold-download-rtts")
	b.ReportMetric(rss, "rss-50-providers-MiB")
	b.ReportMetric(heap, "heap-inuse-50-providers-MiB")
	b.ReportMetric(hwm, "peak-rss-MiB")
	b.ReportMetric(0, "ns/op")
}

// serveProcess runs `oci-tofu serve` over TLS with args and waits until it
// answers; it returns its base URL and process.
func serveProcess(b *testing.B, bin string, ca *testenv.CA, args ...string) (string, *exec.Cmd) {
	b.Helper()
	port := testenv.FreePort(b)
	u := fmt.Sprintf("https://localhost:%d", port)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile, "--log-level", "error"}, args...)...)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+b.TempDir())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	proxyWaitHealthy(b, proxyClient(ca), u)
	return u, cmd
}

// timeGet GETs u, wants 200, and returns how long it took.
func timeGet(b *testing.B, c *http.Client, u string) time.Duration {
	b.Helper()
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v %s", u, resp.StatusCode, err, body)
	}
	return d
}

// countedGet is timeGet, with the registry requests it caused (in the
// registry's access log).
func countedGet(b *testing.B, c *http.Client, reg *testenv.Registry, u string) (time.Duration, int) {
	b.Helper()
	before := waitQuiet(reg)
	d := timeGet(b, c, u)
	return d, waitQuiet(reg) - before
}

// waitQuiet waits until the registry has answered no request for a tenth
// of a second, and returns how many it answered.
func waitQuiet(reg *testenv.Registry) int {
	n := -1
	for n != len(reg.AccessLog()) {
		n = len(reg.AccessLog())
		time.Sleep(100 * time.Millisecond)
	}
	return n
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// metricValue reads one unlabelled Prometheus metric from u.
func metricValue(b *testing.B, c *http.Client, u, name string) float64 {
	b.Helper()
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	b.Fatalf("%s: no %s", u, name)
	return 0
}
