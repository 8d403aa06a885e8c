package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Shape of the largest-provider benchmark (issue 21): hashicorp/aws has
// over 600 versions of about 15 platforms; this is 2,000 × 15, in a
// registry 40 ms away, and 50 such providers for the memory figure.
const (
	largestVersions  = 2000
	largestProviders = 50
	largestOneWay    = 20 * time.Millisecond
	// largestCacheBytes is the proxy's --cache-bytes here: serve's default.
	largestCacheBytes = 256 << 20
)

// BenchmarkLargestProvider measures cold /versions (the registry
// protocol's listing) of a provider of 2,000 versions × 15 platforms from
// a registry 40 ms away, beside one round trip of a static file through
// the same distance (the goals in brackets):
//
//   - the very first /versions of a proxy (no connection to the registry
//     yet: every connection it opens is a TCP and TLS handshake at the
//     distance), of three proxies started for it [< 1 s];
//   - cold /versions of a provider the proxy has not read, connections
//     open [< 1 s], in round trips of the reference;
//   - the registry requests and new connections each makes;
//   - the proxy's RSS and Go heap in use with 50 such providers (100,000
//     versions, 1.5 million platform entries) listed, against
//     --cache-bytes [the caches within it].
//
// The registry is CNCF Distribution v3 behind a TCP delay front (20 ms
// each way), its requests counted in its own access log; the proxy is the
// real binary with serve's defaults. The provider is seeded with
// seed.ListingProvider (every version an index of its own, the rest
// shared), and 49 aliases of its storage are distinct repositories to the
// proxy and the registry.
func BenchmarkLargestProvider(b *testing.B) {
	reg := testenv.StartRegistryWithAccessLog(b)
	bin := buildOCITofu(b)
	seedStart := time.Now()
	seed.SignedListing(b, reg, "bench/acme0/aws", largestVersions, seed.ManyPlatforms)
	b.Logf("seeded %d versions × %d platforms in %v", largestVersions, len(seed.ManyPlatforms), time.Since(seedStart).Round(time.Millisecond))
	for i := 1; i < largestProviders; i++ {
		reg.AliasRepository(b, "bench/acme0/aws", fmt.Sprintf("bench/acme%d/aws", i))
	}
	far := testenv.StartDelayFront(b, "127.0.0.1"+reg.Host[strings.LastIndex(reg.Host, ":"):], largestOneWay)

	static := filepath.Join(b.TempDir(), "versions.json")
	os.WriteFile(static, []byte(`{"versions":[]}`), 0o644)
	staticURL := far.ServeFile(b, static)
	client := proxyClient(reg.CA)
	timeGet(b, client, staticURL)
	var rtts []float64
	for i := 0; i < 10; i++ {
		rtts = append(rtts, timeGet(b, client, staticURL).Seconds())
	}
	rtt := median(rtts)

	serve := func() (string, *exec.Cmd) {
		return serveProcess(b, bin, reg.CA, "--provider-template", far.Host+"/bench/${namespace}/${type}",
			"--cache-bytes", fmt.Sprint(largestCacheBytes))
	}
	var proxyCPU, registryCPU []float64
	listed := func(proxyURL string, pid, i int) (time.Duration, int, int) {
		conns := far.Connections()
		waitQuiet(reg)
		pc, rc := procCPU(b, pid), procCPU(b, reg.Pid())
		d, n := countedGet(b, client, reg, fmt.Sprintf("%s/v1/providers/acme%d/aws/versions", proxyURL, i))
		proxyCPU = append(proxyCPU, (procCPU(b, pid) - pc).Seconds())
		registryCPU = append(registryCPU, (procCPU(b, reg.Pid()) - rc).Seconds())
		return d, n, far.Connections() - conns
	}

	b.ResetTimer()
	// The very first /versions of a proxy: three proxies, each started
	// for it, each listing a provider of its own.
	var first, firstReqs, firstConns []float64
	for i := largestProviders - 3; i < largestProviders; i++ {
		u, cmd := serve()
		d, n, c := listed(u, cmd.Process.Pid, i)
		first, firstReqs, firstConns = append(first, d.Seconds()), append(firstReqs, float64(n)), append(firstConns, float64(c))
		cmd.Process.Kill()
	}
	proxyURL, cmd := serve()
	versions := func(i int) string { return fmt.Sprintf("%s/v1/providers/acme%d/aws/versions", proxyURL, i) }
	timeGet(b, client, versions(0)) // connections open
	var cold, reqs, conns []float64
	for i := 1; i <= 5; i++ {
		d, n, c := listed(proxyURL, cmd.Process.Pid, i)
		cold, reqs, conns = append(cold, d.Seconds()), append(reqs, float64(n)), append(conns, float64(c))
	}
	b.StopTimer()
	load, _ := os.ReadFile("/proc/loadavg")
	for i := 6; i < largestProviders; i++ { // all 50 listed by this proxy
		timeGet(b, client, versions(i))
	}
	status := testenv.ProcStatus(b, cmd.Process.Pid)
	rss, hwm := float64(status["VmRSS"])/1024, float64(status["VmHWM"])/1024
	heap := metricValue(b, client, proxyURL+"/metrics", "go_memstats_heap_inuse_bytes") / (1 << 20)
	// The heap live at the last collection: the collector's next target
	// is twice that (GOGC=100). Heap in use also counts what is garbage
	// but not yet collected.
	live := metricValue(b, client, proxyURL+"/metrics", "go_memstats_next_gc_bytes") / 2 / (1 << 20)
	cmd.Process.Kill()
	coldCPU := proxyCPU[3:]

	// The same with the version index written (every alias shares the
	// storage, so all 50 have it): three fresh proxies' first listings,
	// each once /readyz answers (as a deploy or a scale-out sends a new
	// replica traffic), then cold listings of one proxy with its
	// connections open.
	indexBytes := writeLargestIndex(b, reg)
	b.StartTimer()
	var firstIndexed, indexed, indexedReqs []float64
	for i := largestProviders - 3; i < largestProviders; i++ {
		u, cmd := serve()
		timeGet(b, client, u+"/readyz") // as a deploy sends traffic: once ready
		d, n, _ := listed(u, cmd.Process.Pid, i)
		firstIndexed, indexedReqs = append(firstIndexed, d.Seconds()), append(indexedReqs, float64(n))
		cmd.Process.Kill()
	}
	proxyURL, cmd = serve()
	timeGet(b, client, versions(0))
	for i := 1; i <= 5; i++ {
		d, n, _ := listed(proxyURL, cmd.Process.Pid, i)
		indexed, indexedReqs = append(indexed, d.Seconds()), append(indexedReqs, float64(n))
	}
	b.StopTimer()

	b.Logf("static file through the delay: %.1f ms", rtt*1000)
	b.Logf("first cold /versions of a fresh proxy %v (registry requests %v, new connections %v); cold %v; requests %v; new connections %v",
		first, firstReqs, firstConns, cold, reqs, conns)
	b.Logf("CPU per listing (three first, then cold): proxy %v s, registry %v s; load average %s", proxyCPU, registryCPU, strings.TrimSpace(string(load)))
	b.Logf("%d providers listed: RSS %.0f MiB (peak %.0f), Go heap in use %.0f MiB, live at the last collection %.0f MiB; --cache-bytes %d MiB",
		largestProviders, rss, hwm, heap, live, largestCacheBytes>>20)
	b.ReportMetric(rtt*1000, "static-rtt-ms")
	b.ReportMetric(median(first)*1000, "first-cold-versions-ms")
	b.ReportMetric(median(first)/rtt, "first-cold-versions/rtt")
	b.ReportMetric(median(firstConns), "first-cold-new-connections")
	b.ReportMetric(median(cold)*1000, "cold-versions-ms")
	b.ReportMetric(median(cold)/rtt, "cold-versions/rtt")
	b.ReportMetric(median(reqs), "cold-versions-requests")
	b.ReportMetric(median(conns), "cold-versions-new-connections")
	b.Logf("with the version index (%d bytes): first cold /versions of a fresh proxy %v, cold %v, registry requests %v", indexBytes, firstIndexed, indexed, indexedReqs)
	b.ReportMetric(median(indexed)*1000, "indexed-cold-versions-ms")
	b.ReportMetric(median(indexed)/rtt, "indexed-cold-versions/rtt")
	b.ReportMetric(median(firstIndexed)*1000, "indexed-first-cold-versions-ms")
	b.ReportMetric(median(firstIndexed)/median(indexed), "indexed-first/cold")
	b.ReportMetric(median(indexedReqs), "indexed-cold-versions-requests")
	b.ReportMetric(median(coldCPU[:5])*1000, "proxy-cpu-per-listing-ms")
	b.ReportMetric(median(registryCPU[3:8])*1000, "registry-cpu-per-listing-ms")
	b.ReportMetric(rss, "rss-50-providers-MiB")
	b.ReportMetric(heap, "heap-inuse-50-providers-MiB")
	b.ReportMetric(live, "heap-live-50-providers-MiB")
	b.ReportMetric(hwm, "peak-rss-MiB")
	b.ReportMetric(float64(largestCacheBytes>>20), "cache-bytes-MiB")
	b.ReportMetric(0, "ns/op")
}

// writeLargestIndex writes the version index of bench/acme0/aws's
// versions, as push leaves it (seed.VersionIndex): its size in bytes.
func writeLargestIndex(b *testing.B, reg *testenv.Registry) int {
	b.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		b.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "bench/acme0/aws"})
	if err != nil {
		b.Fatal(err)
	}
	_, base, err := oci.FetchReference(context.Background(), repo, seed.Version(0))
	if err != nil {
		b.Fatal(err)
	}
	size, err := seed.VersionIndex(context.Background(), repo, base, largestVersions)
	if err != nil {
		b.Fatal(err)
	}
	return size
}
