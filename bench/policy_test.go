package bench

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Shape of the policy benchmark (issue 19): a policy of 1,000 rules, one
// provider of 500 signed versions × 4 platforms.
const (
	policyRules    = 1000
	policyVersions = 500
	policyRounds   = 10 // cold /versions per side; each a provider neither proxy read
)

// writeBenchPolicy writes a policy of policyRules rules whose deciding
// rules come last: 998 rules for other providers first (exact addresses,
// and wildcards of other namespaces), then the two that match the
// benchmark's providers (acme/big and its aliases acmeN/big) under their
// mirror and registry hosts, with a
// version constraint and a denied version, so each decision reads both.
func writeBenchPolicy(b *testing.B, path, comment string) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s\n", comment)
	for i := 0; i < policyRules-2; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&sb, "provider \"registry.opentofu.org/other%d/p\" { deny = [\"1.0.0\"] }\n", i)
		} else {
			fmt.Fprintf(&sb, "provider \"localhost/other%d/*\" { versions = \"< 1.0\" }\n", i)
		}
	}
	for _, host := range []string{"registry.opentofu.org", "localhost"} {
		fmt.Fprintf(&sb, "provider \"%s/*/*\" {\n  versions = \">= 1.0.0\"\n  deny     = [\"99.0.0\"]\n}\n", host)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPolicy measures what a policy of 1,000 rules adds to the
// proxy's answers, against the same proxy without a policy, both real
// binaries reading one registry on loopback (no distance to hide the
// cost in), in alternating order:
//
//   - cold /versions of a provider of 500 versions: 500 decisions (and
//     the index reads the listing needs anyway) [≤ 1.05];
//   - warm <version>.json, the document cache's answer: no decision, but
//     the cache key names the policy generation — the policy proxy has
//     reloaded its file once, so it pays that [≤ 1.05].
//
// Each is reported as the proxy process's CPU time per answer (the figure
// to judge by on a shared machine) and as wall-clock medians.
func BenchmarkPolicy(b *testing.B) {
	reg := testenv.StartRegistry(b)
	bin := buildOCITofu(b)
	seed.SignedProvider(b, reg, "bench/acme/big", policyVersions)
	for i := 1; i <= 2*policyRounds*b.N; i++ {
		reg.AliasRepository(b, "bench/acme/big", fmt.Sprintf("bench/acme%d/big", i))
	}
	file := filepath.Join(b.TempDir(), "policy.hcl")
	writeBenchPolicy(b, file, "first")
	template := reg.Host + "/bench/${namespace}/${type}"
	plainURL, plainCmd := serveProcess(b, bin, reg.CA, "--provider-template", template)
	policyURL, cmd := serveProcess(b, bin, reg.CA, "--provider-template", template, "--policy", file)
	client := proxyClient(reg.CA)
	writeBenchPolicy(b, file, "reloaded")
	cmd.Process.Signal(syscall.SIGHUP)
	for metricValue(b, client, policyURL+"/metrics", "oci_tofu_policy_reloads_total") < 1 {
		time.Sleep(50 * time.Millisecond)
	}

	versionPath := "/v1/mirror/registry.opentofu.org/acme/big/" + seed.Version(policyVersions/2) + ".json"
	timeGet(b, client, plainURL+versionPath)
	timeGet(b, client, policyURL+versionPath)
	load := proxyLoad
	if wrk, err := exec.LookPath("wrk"); err == nil {
		load = func(b *testing.B, _ *http.Client, u string, workers int, d time.Duration) float64 {
			return proxyWrk(b, wrk, u, workers, d)
		}
	}

	b.ResetTimer()
	plain, pol := &policySide{url: plainURL, pid: plainCmd.Process.Pid}, &policySide{url: policyURL, pid: cmd.Process.Pid}
	provider := 0
	for i := 0; i < b.N; i++ {
		for r := 0; r < policyRounds; r++ {
			provider++
			for _, s := range abba(r, plain, pol) {
				before := procCPU(b, s.pid)
				s.coldWall = append(s.coldWall, timeGet(b, client, fmt.Sprintf("%s/v1/providers/acme%d/big/versions", s.url, provider)).Seconds())
				s.coldCPU += procCPU(b, s.pid) - before
			}
		}
		for r := 0; r < 6; r++ {
			for _, s := range abba(r, plain, pol) {
				before := procCPU(b, s.pid)
				rate := load(b, client, s.url+versionPath, 32, 2*time.Second)
				s.warmRate = append(s.warmRate, rate)
				s.warmCPU += procCPU(b, s.pid) - before
				s.warmRequests += rate * 2
			}
		}
	}
	b.StopTimer()
	decisions := metricSum(b, client, policyURL+"/metrics", "oci_tofu_policy_decisions_total{")
	if want := float64(policyRounds * b.N * policyVersions); decisions < want {
		b.Fatalf("the policy proxy made %.0f decisions, fewer than the %.0f of its cold listings: the policy was not applied", decisions, want)
	}
	b.Logf("cold /versions s: no policy %.3f, policy %.3f", plain.coldWall, pol.coldWall)
	b.Logf("warm <version>.json req/s: no policy %.0f, policy %.0f", plain.warmRate, pol.warmRate)
	listings := float64(policyRounds * b.N)
	cpuCold := func(s *policySide) float64 { return s.coldCPU.Seconds() * 1000 / listings }
	cpuWarm := func(s *policySide) float64 { return s.warmCPU.Seconds() * 1e6 / s.warmRequests }
	// CPU time is the figure to judge by on a shared machine: wall clock
	// varies by tens of per cent from one round to the next there.
	b.ReportMetric(cpuCold(pol), "cold-versions-cpu-policy-ms")
	b.ReportMetric(cpuCold(plain), "cold-versions-cpu-none-ms")
	b.ReportMetric(cpuCold(pol)/cpuCold(plain), "cold-versions-cpu-policy/none")
	b.ReportMetric(median(pol.coldWall)/median(plain.coldWall), "cold-versions-wall-policy/none")
	b.ReportMetric(cpuWarm(pol), "warm-json-cpu-policy-us")
	b.ReportMetric(cpuWarm(plain), "warm-json-cpu-none-us")
	b.ReportMetric(cpuWarm(pol)/cpuWarm(plain), "warm-json-cpu-policy/none")
	b.ReportMetric(median(plain.warmRate)/median(pol.warmRate), "warm-json-req/s-none/policy")
	b.ReportMetric(0, "ns/op")
}

// policySide is one proxy of BenchmarkPolicy and what was measured of it.
type policySide struct {
	url          string
	pid          int
	coldWall     []float64 // seconds per cold /versions
	coldCPU      time.Duration
	warmRate     []float64 // req/s
	warmCPU      time.Duration
	warmRequests float64
}

// abba is the two sides in round r's order: a, b, then b, a.
func abba(r int, a, b *policySide) []*policySide {
	if r%2 == 1 {
		return []*policySide{b, a}
	}
	return []*policySide{a, b}
}

// metricSum adds the values of every series of a metric whose lines start
// with prefix.
func metricSum(b *testing.B, c *http.Client, u, prefix string) float64 {
	b.Helper()
	body := proxyGet(b, c, u)
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, prefix) {
			var f float64
			fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &f)
			sum += f
		}
	}
	return sum
}
