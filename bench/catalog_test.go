package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Shape of the catalogue benchmark (issue 42): 2,000 modules of 20
// versions each and 500 providers, in a registry 40 ms away.
const (
	catalogModules          = 2000
	catalogModuleVersions   = 20
	catalogProviders        = 500
	catalogProviderVersions = 10
	catalogOneWay           = 20 * time.Millisecond
)

// writeCatalogModule writes a module of version v as a platform team
// writes one: inputs of several types with descriptions, outputs,
// resources of a provider it requires, a README.
func writeCatalogModule(b *testing.B, v string) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "module")
	var vars strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&vars, "variable \"setting_%02d\" {\n  type        = map(string)\n  description = \"Setting %d of the network.\"\n  default     = {}\n}\n\n", i, i)
	}
	files := map[string]string{
		"README.md":    "# network\n\nA VPC with subnets, version " + v + ".\n",
		"variables.tf": "variable \"cidr_block\" {\n  type        = string\n  description = \"The VPC's range.\"\n}\n\n" + vars.String(),
		"main.tf": `terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}

resource "aws_vpc" "this" {
  cidr_block = var.cidr_block
}

resource "aws_subnet" "private" {
  vpc_id     = aws_vpc.this.id
  cidr_block = cidrsubnet(var.cidr_block, 8, 1)
}
`,
		"outputs.tf": "output \"vpc_id\" {\n  description = \"The VPC.\"\n  value       = aws_vpc.this.id\n}\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// seedCatalog fills reg with the catalogue benchmarks' registry:
// catalogModules modules of catalogModuleVersions versions under
// bench/modules/acme/netNNNN/aws, and catalogProviders providers of
// catalogProviderVersions under bench/providers/acme/pNNN. One module
// repository is pushed with bin's `push module` (the interface stored as
// at every push) and one provider seeded; the rest are aliases of their
// storage, distinct repositories to the registry and the proxy.
func seedCatalog(b *testing.B, reg *testenv.Registry, bin string) {
	b.Helper()
	e := env(b)
	start := time.Now()
	first := "bench/modules/acme/net0000/aws"
	for i := 0; i < catalogModuleVersions; i++ {
		runMeasured(b, e, bin, "push", "module", "--quiet", writeCatalogModule(b, seed.Version(i)), fmt.Sprintf("%s/%s:%s", reg.Host, first, seed.Version(i)))
	}
	for i := 1; i < catalogModules; i++ {
		reg.AliasRepository(b, first, fmt.Sprintf("bench/modules/acme/net%04d/aws", i))
	}
	seed.SignedProvider(b, reg, "bench/providers/acme/p000", catalogProviderVersions)
	for i := 1; i < catalogProviders; i++ {
		reg.AliasRepository(b, "bench/providers/acme/p000", fmt.Sprintf("bench/providers/acme/p%03d", i))
	}
	b.Logf("seeded %d modules × %d versions and %d providers × %d versions in %v", catalogModules, catalogModuleVersions,
		catalogProviders, catalogProviderVersions, time.Since(start).Round(time.Millisecond))
}

// catalogPage is what the benchmark checks of a catalogue index's JSON.
type catalogPage struct {
	Total         int `json:"total"`
	ProviderTotal int `json:"provider_total"`
	Modules       []struct {
		Address  string `json:"address"`
		Latest   string `json:"latest"`
		Versions int    `json:"versions"`
	} `json:"modules"`
}

// BenchmarkCatalog measures the catalogue of a registry holding 2,000
// modules × 20 versions (each with its interface stored beside it) and
// 500 providers × 10 versions, 40 ms away, beside one round trip of a
// static file through the same distance (the goals in brackets):
//
//   - the first catalogue page (/catalog/, modules and providers) of a
//     freshly started proxy, of three proxies [< 1 s], and the registry
//     requests it makes;
//   - a search matching every module by an input name, first (cold: each
//     module's interface read) and warm [< 50 ms], and a warm search
//     matching none, with the registry requests a warm search makes
//     [none].
//
// The registry is CNCF Distribution v3 behind a TCP delay front (20 ms
// each way), its requests counted in its own access log; the proxy is the
// real binary with serve's defaults; the registry is seedCatalog's.
func BenchmarkCatalog(b *testing.B) {
	reg := testenv.StartRegistryWithAccessLog(b)
	bin := buildOCITofu(b)
	seedCatalog(b, reg, bin)
	far := testenv.StartDelayFront(b, "127.0.0.1"+reg.Host[strings.LastIndex(reg.Host, ":"):], catalogOneWay)

	static := filepath.Join(b.TempDir(), "index.json")
	os.WriteFile(static, []byte(`{"modules":[]}`), 0o644)
	staticURL := far.ServeFile(b, static)
	client := proxyClient(reg.CA)
	timeGet(b, client, staticURL)
	var rtts []float64
	for i := 0; i < 10; i++ {
		rtts = append(rtts, timeGet(b, client, staticURL).Seconds())
	}
	rtt := median(rtts)

	serve := func() string {
		u, _ := serveProcess(b, bin, reg.CA, "--module-template", far.Host+"/bench/modules/${namespace}/${name}/${system}",
			"--provider-template", far.Host+"/bench/providers/${namespace}/${type}")
		return u
	}
	index := func(u string) catalogPage {
		var p catalogPage
		getJSON(b, client, u, &p)
		return p
	}

	b.ResetTimer()
	var firstPage, firstReqs []float64
	var proxyURL string
	for i := 0; i < 3; i++ {
		proxyURL = serve()
		d, n := countedGet(b, client, reg, proxyURL+"/catalog/?format=json")
		firstPage, firstReqs = append(firstPage, d.Seconds()), append(firstReqs, float64(n))
	}
	p := index(proxyURL + "/catalog/?format=json")
	if p.Total != catalogModules || p.ProviderTotal != catalogProviders || len(p.Modules) == 0 ||
		p.Modules[0].Latest != seed.Version(catalogModuleVersions-1) || p.Modules[0].Versions != catalogModuleVersions {
		b.Fatalf("the first page lists %d modules (first %+v), %d providers; want %d and %d", p.Total, p.Modules[:min(1, len(p.Modules))],
			p.ProviderTotal, catalogModules, catalogProviders)
	}

	every := proxyURL + "/catalog/?format=json&q=setting_07"
	none := proxyURL + "/catalog/?format=json&q=no_such_input"
	coldSearch, coldReqs := countedGet(b, client, reg, every)
	if p := index(every); p.Total != catalogModules {
		b.Fatalf("searching an input name finds %d modules, want %d", p.Total, catalogModules)
	}
	var warm, warmNone, warmReqs []float64
	for i := 0; i < 10; i++ {
		d, n := countedGet(b, client, reg, every)
		warm, warmReqs = append(warm, d.Seconds()), append(warmReqs, float64(n))
		warmNone = append(warmNone, timeGet(b, client, none).Seconds())
	}
	b.StopTimer()
	b.Logf("registry requests of a warm search, by kind: %v", requestKinds(reg, func() { timeGet(b, client, every) }))
	u := serve()
	b.Logf("registry requests of a fresh proxy's first page, by kind: %v", requestKinds(reg, func() { timeGet(b, client, u+"/catalog/") }))

	b.Logf("static file through the delay: %.1f ms", rtt*1000)
	b.Logf("first catalogue page of a fresh proxy %v s (registry requests %v); cold search %v (%d requests); warm %v s (requests %v), matching none %v s",
		firstPage, firstReqs, coldSearch, coldReqs, warm, warmReqs, warmNone)
	b.ReportMetric(rtt*1000, "static-rtt-ms")
	b.ReportMetric(median(firstPage)*1000, "first-page-ms")
	b.ReportMetric(median(firstPage)/rtt, "first-page/rtt")
	b.ReportMetric(median(firstReqs), "first-page-requests")
	b.ReportMetric(coldSearch.Seconds()*1000, "cold-search-ms")
	b.ReportMetric(float64(coldReqs), "cold-search-requests")
	b.ReportMetric(median(warm)*1000, "warm-search-ms")
	b.ReportMetric(median(warmNone)*1000, "warm-search-none-ms")
	b.ReportMetric(median(warmReqs), "warm-search-requests")
	b.ReportMetric(0, "ns/op")
}

// getJSON GETs u, wants 200, and decodes its JSON into v.
func getJSON(b *testing.B, c *http.Client, u string, v any) {
	b.Helper()
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v %s", u, resp.StatusCode, err, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		b.Fatalf("GET %s: %v", u, err)
	}
}

// requestKinds counts the registry requests do causes by method and
// path, repository names and digests left out.
func requestKinds(reg *testenv.Registry, do func()) map[string]int {
	before := waitQuiet(reg)
	do()
	waitQuiet(reg)
	kinds := map[string]int{}
	for _, l := range reg.AccessLog()[before:] {
		f := strings.Fields(l)
		path := f[1]
		for _, kind := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
			if i := strings.Index(path, kind); i >= 0 {
				path = kind
				if strings.Contains(f[1], "/manifests/sha256-") {
					path += "(referrers tag)"
				}
			}
		}
		kinds[f[0]+" "+path]++
	}
	return kinds
}
