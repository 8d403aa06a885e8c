package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Shape of the vulnerability report benchmark (issue 32): over 2,000
// platform SBOMs, one provider of 500 versions × 4 platforms, each
// platform's SBOM a provider of 150 modules.
const (
	vulnsVersions = 500
	vulnsModules  = 150
	vulnsGoal     = 5 * time.Second
)

// BenchmarkVulns measures `oci-tofu vulns --json` (the real binary) over
// a provider of 500 versions × 4 platforms in CNCF Distribution, each
// platform manifest with an SBOM referrer (the same SPDX bytes: 150
// modules, golang.org/x/text v0.3.7 among them), against convert/vulns'
// fixture database [goal: < 5 s for the 2,000 SBOMs]. Reported: the
// wall time of one report, and per platform SBOM.
func BenchmarkVulns(b *testing.B) {
	reg := testenv.StartRegistry(b)
	bin := buildOCITofu(b)
	start := time.Now()
	seed.SignedPlatforms(b, reg, "bench/acme/vulnerable", vulnsVersions)
	n := attachBenchSBOMs(b, reg, "bench/acme/vulnerable")
	b.Logf("seeded %d versions, %d platform SBOMs in %v", vulnsVersions, n, time.Since(start).Round(time.Millisecond))
	if n < 2000 {
		b.Fatalf("%d distinct platform manifests, want at least 2,000", n)
	}
	db := testenv.Root(b) + "/convert/vulns/testdata/db"
	e := env(b)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		d, _ := runMeasured(b, e, bin, "vulns", "--json", "--vuln-db", db, reg.Host+"/bench/acme/vulnerable")
		total += d
	}
	b.StopTimer()
	per := total / time.Duration(b.N)
	b.Logf("vulns over %d platform SBOMs: %v (goal %v)", n, per.Round(time.Millisecond), vulnsGoal)
	b.ReportMetric(per.Seconds(), "report-s")
	b.ReportMetric(float64(per.Microseconds())/float64(n), "us/sbom")
	b.ReportMetric(per.Seconds()/vulnsGoal.Seconds(), "report/goal")
}

// attachBenchSBOMs attaches one SPDX document to every platform manifest
// of every version of repository name, and returns how many manifests
// have one.
func attachBenchSBOMs(b *testing.B, reg *testenv.Registry, name string) int {
	b.Helper()
	ctx := context.Background()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		b.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: name})
	if err != nil {
		b.Fatal(err)
	}
	deps := []sbom.Module{{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="}}
	for i := 1; i < vulnsModules; i++ {
		deps = append(deps, sbom.Module{Path: fmt.Sprintf("example.com/dep%03d", i), Version: fmt.Sprintf("v1.%d.0", i), Sum: "h1:" + strings.Repeat("A", 43) + "="})
	}
	doc := &sbom.Document{Name: name, Version: "1.0.0", Platform: "linux_amd64", FileName: "terraform-provider-big_1.0.0_linux_amd64.zip",
		ZipDigest: digest.FromString("zip"), Created: time.Unix(0, 0),
		Executables: []sbom.Executable{{Name: "terraform-provider-big_v1.0.0", SHA256: strings.Repeat("ab", 32), Size: 1,
			Go: &sbom.GoBuild{GoVersion: "go1.22.1", Path: "example.com/terraform-provider-big", Main: sbom.Module{Path: "example.com/terraform-provider-big", Version: "(devel)"},
				Deps: deps, Settings: map[string]string{"GOOS": "linux", "GOARCH": "amd64"}}}}}
	spdx, err := doc.SPDX()
	if err != nil {
		b.Fatal(err)
	}
	vs, err := oci.ListVersions(ctx, repo)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[digest.Digest]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, v := range vs {
		g.Go(func() error {
			pv, err := oci.ResolveProvider(gctx, repo, v)
			if err != nil {
				return err
			}
			for _, m := range pv.Platforms {
				mu.Lock()
				dup := seen[m.Digest]
				seen[m.Digest] = true
				mu.Unlock()
				if dup {
					continue
				}
				if _, _, err := sbom.Attach(gctx, repo, m.Digest, spdx, time.Unix(0, 0)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return len(seen)
}
