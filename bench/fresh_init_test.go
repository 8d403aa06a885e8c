package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Shape of the fresh-replica benchmark (issue 44, item 3): one provider
// the size of hashicorp/aws and 19 of some hundreds of versions, a
// registry 40 ms away.
const (
	freshInitSmall         = 19
	freshInitSmallVersions = 300
)

// BenchmarkFreshInit measures a real `tofu init` of a configuration of
// 20 providers (one of 2,000 versions × 15 platforms, 19 of 300 versions
// × 4 platforms) through serve's network mirror, the registry 40 ms away
// (a TCP delay front), each round twice: through a proxy process started
// for it, once its /readyz answers (as a deploy or a scale-out sends a
// new replica traffic), then again through the same, now warm, proxy
// (the goal: fresh / warm ≤ 1.2). Each init starts from an empty
// directory, so both download every package. Modules are not part of
// the configuration yet.
func BenchmarkFreshInit(b *testing.B) {
	reg := testenv.StartRegistryWithAccessLog(b)
	bin := buildOCITofu(b)
	seedStart := time.Now()
	// The seeds' provider type is "big": the 20 differ by namespace.
	seed.SignedListing(b, reg, "bench/aws/big", largestVersions, seed.ManyPlatforms)
	addrs := []string{"example.com/aws/big"}
	for i := range freshInitSmall {
		seed.SignedListing(b, reg, fmt.Sprintf("bench/p%02d/big", i), freshInitSmallVersions, seed.Platforms)
		addrs = append(addrs, fmt.Sprintf("example.com/p%02d/big", i))
	}
	b.Logf("seeded 20 providers in %v", time.Since(seedStart).Round(time.Millisecond))
	far := testenv.StartDelayFront(b, "127.0.0.1"+reg.Host[strings.LastIndex(reg.Host, ":"):], largestOneWay)
	client := proxyClient(reg.CA)
	config := freshInitConfig(addrs)

	var fresh, warm, freshReqs, warmReqs []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u, cmd := serveProcess(b, bin, reg.CA, "--provider-template", far.Host+"/bench/${namespace}/${type}")
		timeGet(b, client, u+"/readyz")
		tofu := testenv.Tofu(b, fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", u+"/v1/mirror/"))
		for _, side := range []*[]float64{&fresh, &warm} {
			before := waitQuiet(reg)
			dir := testenv.WriteConfig(b, map[string]string{"main.tf": config})
			start := time.Now()
			if out, err := tofu.Try(b, dir, "init", "-input=false", "-no-color"); err != nil {
				b.Fatalf("tofu init: %v\n%s", err, out)
			}
			*side = append(*side, time.Since(start).Seconds())
			reqs := float64(waitQuiet(reg) - before)
			if side == &fresh {
				freshReqs = append(freshReqs, reqs)
			} else {
				warmReqs = append(warmReqs, reqs)
			}
		}
		cmd.Process.Kill()
	}
	b.StopTimer()
	b.Logf("tofu init of 20 providers: through a fresh proxy %v s (registry requests %v), through it again warm %v s (%v)", fresh, freshReqs, warm, warmReqs)
	b.ReportMetric(median(fresh), "fresh-init-s")
	b.ReportMetric(median(warm), "warm-init-s")
	b.ReportMetric(median(fresh)/median(warm), "fresh/warm")
	b.ReportMetric(median(freshReqs), "fresh-registry-requests")
	b.ReportMetric(median(warmReqs), "warm-registry-requests")
	b.ReportMetric(0, "ns/op")
}

// freshInitConfig is a configuration requiring each of addrs at its
// newest version (what tofu picks without a lock file).
func freshInitConfig(addrs []string) string {
	var sb strings.Builder
	sb.WriteString("terraform {\n  required_providers {\n")
	for i, a := range addrs {
		n := freshInitSmallVersions
		if i == 0 {
			n = largestVersions
		}
		fmt.Fprintf(&sb, "    p%02d = { source = %q, version = %q }\n", i, a, ">= "+seed.Version(0)+", <= "+seed.Version(n-1))
	}
	sb.WriteString("  }\n}\n")
	return sb.String()
}
