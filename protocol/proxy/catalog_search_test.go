package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// searchModules are packages a search for "vpc" finds at each rank:
// acme/vpc/aws by its exact name, acme/vpc-peering/aws by a word of its
// address, acme/subnets/aws by an input's name, others/notes/aws by an
// output's description, others/flowlogs/aws by a resource type.
func searchModules(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"acme/vpc/aws":         vpcModule(t, "2.0.0"),
		"acme/vpc-peering/aws": moduleZip(t, "0.1.0"),
		"acme/subnets/aws": zipOf(t, map[string]string{"main.tf": `variable "vpc_id" { type = string }
resource "google_compute_subnetwork" "this" {}
`}),
		"others/notes/aws": zipOf(t, map[string]string{"main.tf": `output "sits" {
  value       = 1
  description = "the VPC it sits in"
}
`}),
		"others/flowlogs/aws": zipOf(t, map[string]string{"main.tf": `resource "aws_default_vpc" "this" {}` + "\n"}),
	}
}

// searchPolicy denies acme/vpc/aws 2.0.0 (its newest: 1.0.0 and 1.1.0,
// deprecated, are served) and deprecates others/notes/aws 0.1.0 (its
// only version); extra is added.
func searchPolicy(extra string) string {
	return `
module "example.com/acme/vpc/aws" {
  deny = ["2.0.0"]
  deprecated {
    versions = "1.1.0"
    message  = "use 1.0.0"
  }
}
module "example.com/others/notes/aws" {
  deprecated {
    versions = "0.1.0"
    message  = "gone soon"
  }
}
` + extra
}

// startSearchCatalog serves searchModules from OCI layouts, never served
// before, under searchPolicy(extra).
func startSearchCatalog(t *testing.T, extra string, opts Options) *proxy {
	t.Helper()
	mdir, mopen := moduleStore(t)
	for addr, z := range searchModules(t) {
		parts := strings.Split(addr, "/")
		if addr == "acme/vpc/aws" {
			for _, v := range []string{"1.0.0", "1.1.0"} {
				push(t, mopen(parts[0], parts[1], parts[2]), moduleArtifact(t, vpcModule(t, v)), v)
			}
		}
		push(t, mopen(parts[0], parts[1], parts[2]), moduleArtifact(t, z), map[bool]string{true: "2.0.0", false: "0.1.0"}[addr == "acme/vpc/aws"])
	}
	opts.ModuleMappings = []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}
	opts.RegistryHostname = "example.com"
	opts.Policy = mustPolicy(t, searchPolicy(extra))
	return startProxy(t, opts)
}

// found is what an index lists of modules: NAMESPACE/NAME/SYSTEM, with
// where the search found its words.
func found(idx catalog.IndexPage) []string {
	var out []string
	for _, m := range idx.Modules {
		s := m.Namespace + "/" + m.Name + "/" + m.System
		for _, h := range m.Hits {
			s += " " + h.Where + ":" + h.Text
		}
		out = append(out, s)
	}
	return out
}

// Search ranks as documented: exact name, a word of the address, an
// input or output name, a description, a resource type or provider.
func TestCatalogSearchRanking(t *testing.T) {
	p := startSearchCatalog(t, "", Options{})
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=vpc", nil)
	want := []string{"acme/vpc/aws", "acme/vpc-peering/aws", "acme/subnets/aws input:vpc_id", "others/notes/aws description:the VPC it sits in",
		"others/flowlogs/aws resource:aws_default_vpc"}
	if got := found(idx); r.Status != http.StatusOK || !slices.Equal(got, want) || idx.Total != len(want) {
		t.Errorf("?q=vpc: %d %q (total %d), want %q", r.Status, got, idx.Total, want)
	}
	// A word found both in a name and a description is a name's hit.
	idx, _ = getCatalog[catalog.IndexPage](t, p, "/catalog/?q=cidr", nil)
	if got := found(idx); !slices.Equal(got, []string{"acme/vpc/aws input:cidr"}) {
		t.Errorf("?q=cidr: %q", got)
	}
	// The exact name ranks first though others' addresses hold the words.
	idx, _ = getCatalog[catalog.IndexPage](t, p, "/catalog/?q="+url.QueryEscape("ACME/VPC"), nil)
	if got := found(idx); len(got) < 2 || got[0] != "acme/vpc/aws" || got[1] != "acme/vpc-peering/aws" {
		t.Errorf("?q=ACME/VPC: %q", got)
	}
}

// Filters narrow the index, combined with the search and with kind, and
// are echoed normalised; bad values are 400.
func TestCatalogFilters(t *testing.T) {
	p := startSearchCatalog(t, "", Options{})
	for query, want := range map[string][]string{
		"provider=hashicorp/aws":                       {"acme/vpc/aws", "others/flowlogs/aws"},
		"provider=registry.opentofu.org/hashicorp/aws": {"acme/vpc/aws", "others/flowlogs/aws"},
		"provider=HashiCorp/AWS":                       {"acme/vpc/aws", "others/flowlogs/aws"},
		"provider=google":                              {"acme/subnets/aws"},
		"provider=example.com/hashicorp/aws":           nil,
		"namespace=others":                             {"others/flowlogs/aws", "others/notes/aws"},
		"namespace=Others&provider=hashicorp/aws":      {"others/flowlogs/aws"},
		"status=denied":                                {"acme/vpc/aws"},
		"status=deprecated":                            {"others/notes/aws"},
		"status=served":                                {"acme/subnets/aws", "acme/vpc-peering/aws", "others/flowlogs/aws"},
		"q=vpc&namespace=acme":                         {"acme/vpc/aws", "acme/vpc-peering/aws", "acme/subnets/aws input:vpc_id"},
		"q=vpc&status=served&kind=module":              {"acme/vpc-peering/aws", "acme/subnets/aws input:vpc_id", "others/flowlogs/aws resource:aws_default_vpc"},
		"kind=provider&namespace=acme":                 nil,
	} {
		idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+query, nil)
		if got := found(idx); r.Status != http.StatusOK || !slices.Equal(got, want) || idx.Total != len(want) {
			t.Errorf("?%s: %d %q (total %d), want %q", query, r.Status, got, idx.Total, want)
		}
	}
	idx, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?provider=HashiCorp/AWS&namespace=ACME&status=denied&kind=module", nil)
	if idx.Provider != "registry.opentofu.org/hashicorp/aws" || idx.Namespace != "acme" || idx.Status != "denied" || idx.Kind != "module" {
		t.Errorf("echoed filters: provider %q namespace %q status %q kind %q", idx.Provider, idx.Namespace, idx.Status, idx.Kind)
	}
	for _, query := range []string{"status=gone", "provider=a/b/c/d", "provider=hashi%20corp/aws", "namespace=a/b", "kind=everything"} {
		if r := p.get(t, "/catalog/?"+query); r.Status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", query, r.Status, r.Body)
		}
	}
	html := p.get(t, "/catalog/?q=vpc&provider=hashicorp/aws&status=denied")
	body := string(html.Body)
	for _, want := range []string{`<form method="get" action="" role="search"`, `name="namespace"`, `name="provider" value="registry.opentofu.org/hashicorp/aws"`,
		`<option value="denied" selected>`, `href="modules/example.com/acme/vpc/aws"`} {
		if !strings.Contains(body, want) {
			t.Errorf("index page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "flowlogs") {
		t.Errorf("index page: script, or a module the filters leave out:\n%s", body)
	}
}

// Two clients each see, count and find only their own modules in
// filtered results, after the other warmed every cache.
func TestCatalogFiltersAreScoped(t *testing.T) {
	const tokenA, tokenO = "token-of-acme", "token-of-others"
	p := startSearchCatalog(t, fmt.Sprintf(`
client "acme" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
}
client "others" {
  tokens  = [%q]
  modules = ["*/others/*/*"]
}
`, policy.TokenHash(tokenA), policy.TokenHash(tokenO)), Options{AuthTokens: []string{"operator-token"}})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	queries := map[string][2]int{ // acme's total, others' total
		"provider=hashicorp/aws":        {1, 1},
		"provider=google":               {1, 0},
		"status=denied":                 {1, 0},
		"status=deprecated":             {0, 1},
		"status=served":                 {2, 1},
		"namespace=others":              {0, 2},
		"namespace=acme":                {3, 0},
		"q=vpc&provider=hashicorp/aws":  {1, 1},
		"q=vpc&namespace=others":        {0, 2},
		"q=sits&status=deprecated":      {0, 1},
		"q=vpc_id&provider=google":      {1, 0},
		"q=aws_default_vpc&kind=module": {0, 1},
	}
	clients := []struct{ token, own, other string }{{tokenA, "acme", "others"}, {tokenO, "others", "acme"}}
	for i, c := range clients {
		warmer := clients[1-i]
		for q := range queries {
			if _, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+q, as(warmer.token)); r.Status != http.StatusOK {
				t.Fatalf("%s warming ?%s: %d %s", warmer.own, q, r.Status, r.Body)
			}
		}
		for q, totals := range queries {
			idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+q, as(c.token))
			if r.Status != http.StatusOK || idx.Total != totals[i] || len(idx.Modules) != totals[i] || strings.Contains(string(r.Body), c.other+"/") {
				t.Errorf("%s ?%s: %d total %d, want %d, and nothing of %s:\n%s", c.own, q, r.Status, idx.Total, totals[i], c.other, r.Body)
			}
			for _, m := range idx.Modules {
				if m.Namespace != c.own {
					t.Errorf("%s ?%s lists %s", c.own, q, m.Address)
				}
			}
			html := p.do(t, http.MethodGet, "/catalog/?"+q, as(c.token))
			if strings.Contains(string(html.Body), c.other+"/") {
				t.Errorf("%s's page ?%s names %s's modules", c.own, q, c.other)
			}
		}
	}
}

// A warm search, filtered or not, reads nothing from the registry: the
// listing, the versions and the interfaces are cached (the interfaces by
// manifest).
func TestCatalogWarmSearchReadsNothing(t *testing.T) {
	reg := testenv.StartRegistry(t)
	for addr, z := range searchModules(t) {
		push(t, registryRepo(t, reg, "modules/"+addr), moduleArtifact(t, z), "1.0.0")
	}
	fp := newFaultProxy(t, reg)
	plain, err := oci.NewClient(oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{Client: plain, RegistryHostname: "example.com",
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, fp.host()+"/modules/${namespace}/${name}/${system}")}})
	queries := []string{"q=vpc", "q=v", "q=vp", "q=vpc&provider=hashicorp/aws", "q=vpc&status=served&namespace=acme", "provider=google", "status=deprecated"}
	for _, q := range queries {
		if idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+q, nil); r.Status != http.StatusOK || (q == "q=vpc" && idx.Total != 5) {
			t.Fatalf("cold ?%s: %d %+v", q, r.Status, idx)
		}
	}
	before := fp.count("")
	if before == 0 {
		t.Fatal("the cold searches read nothing through the counting front")
	}
	for _, q := range queries {
		getCatalog[catalog.IndexPage](t, p, "/catalog/?"+q, nil)
	}
	if n := fp.count("") - before; n != 0 {
		t.Errorf("warm searches made %d registry requests, want none", n)
	}
}

// The OpenTofu releases a --tofu-repository holds are in the index (one
// entry) and on a page: every release newest first, its platforms, the
// files of the one shown and how to install it through the proxy.
func TestCatalogListsTofuReleases(t *testing.T) {
	ref, repo := tofuLayout(t)
	for _, v := range []string{"1.8.0", "1.9.0", "1.10.0-beta1"} {
		pushTofuFixture(t, repo, v)
	}
	p := startProxy(t, Options{TofuRepository: &ref})
	if r := p.get(t, "/"); !strings.Contains(string(r.Body), `/catalog/">Catalogue</a>`) {
		t.Errorf("the page does not lead to the catalogue:\n%s", r.Body)
	}
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", nil)
	if r.Status != http.StatusOK || idx.Tofu == nil || *idx.Tofu != (catalog.TofuEntry{URL: "tofu", Latest: "1.9.0", Versions: 3}) {
		t.Fatalf("index: %d tofu %+v\n%s", r.Status, idx.Tofu, r.Body)
	}
	for query, listed := range map[string]bool{"kind=tofu": true, "q=tofu": true, "q=OpenTofu&status=served": true, "kind=module": false,
		"q=vpc": false, "namespace=hashicorp": false, "provider=hashicorp/aws": false, "status=denied": false} {
		if idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+query, nil); r.Status != http.StatusOK || (idx.Tofu != nil) != listed {
			t.Errorf("?%s: %d tofu %+v, want listed %v", query, r.Status, idx.Tofu, listed)
		}
	}
	d, r := getCatalog[catalog.TofuPage](t, p, "/catalog/"+idx.Tofu.URL, nil)
	var versions []string
	for _, v := range d.Versions {
		versions = append(versions, v.Version+" "+strings.Join(v.Platforms, ","))
	}
	want := []string{"1.10.0-beta1 linux_amd64", "1.9.0 darwin_arm64,linux_amd64,linux_arm64", "1.8.0 darwin_arm64,linux_amd64,linux_arm64"}
	if r.Status != http.StatusOK || d.Version != "1.9.0" || d.Latest != "1.9.0" || !slices.Equal(versions, want) {
		t.Fatalf("page: %d version %s latest %s versions %q, want %q\n%s", r.Status, d.Version, d.Latest, versions, want, r.Body)
	}
	if d.Install.APIURL != p.URL+"/tofu/api.json" || d.Install.DownloadURLTemplate != p.URL+"/tofu/download/v{{ .Version }}/{{ .Artifact }}" ||
		!strings.Contains(d.Install.Script, "tofudl --version 1.9.0") || !strings.Contains(d.Install.Script, p.URL+"/tofu/download/v$V/tofu_${V}_linux_amd64.tar.gz") {
		t.Errorf("install: %+v", d.Install)
	}
	if len(d.Files) != len(fixtureFiles(t, "1.9.0")) {
		t.Errorf("files %+v, want those of 1.9.0", d.Files)
	}
	for _, f := range d.Files {
		got := p.get(t, f.URL)
		file, err := os.ReadFile(testenv.Testdata(t, "tofu", "1.9.0", f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != http.StatusOK || string(got.Body) != string(file) {
			t.Errorf("%s: %d, not the release's file", f.URL, got.Status)
		}
	}
	beta, r := getCatalog[catalog.TofuPage](t, p, "/catalog/tofu/1.10.0-beta1", nil)
	if r.Status != http.StatusOK || beta.Version != "1.10.0-beta1" || beta.Latest != "1.9.0" || !strings.Contains(beta.Install.Script, "tofudl --version 1.10.0-beta1") {
		t.Errorf("1.10.0-beta1: %d %+v", r.Status, beta)
	}
	for path, links := range map[string][2]string{"/catalog/tofu/1.8.0": {"../tofu/1.9.0", "../"}, "/catalog/tofu": {"./tofu/1.9.0", "./"}} {
		html := p.get(t, path)
		body := string(html.Body)
		if html.Status != http.StatusOK || !strings.Contains(body, `id="install-script"`) || !strings.Contains(body, `href="`+links[0]+`"`) ||
			!strings.Contains(body, `<a href="`+links[1]+`">Catalogue</a>`) {
			t.Errorf("%s: %d, want links %q\n%s", path, html.Status, links, body)
		}
		for link, want := range map[string]string{links[0]: "/catalog/tofu/1.9.0", links[1]: "/catalog/"} {
			if to, _ := url.Parse(resolve(t, html.URL, link)); to.Path != want {
				t.Errorf("%s: %s leads to %s, want %s", path, link, to.Path, want)
			}
		}
	}
	if index := p.get(t, "/catalog/"); !strings.Contains(string(index.Body), `<a href="tofu">OpenTofu releases</a>`) {
		t.Errorf("index HTML lacks the releases:\n%s", index.Body)
	}
	for path, want := range map[string]int{
		"/catalog/tofu/1.7.0":       http.StatusNotFound,
		"/catalog/tofu/v1.9.0":      http.StatusBadRequest,
		"/catalog/tofu/1.9":         http.StatusBadRequest,
		"/catalog/tofu/1.9.0/files": http.StatusBadRequest,
		"/catalog/tofu/":            http.StatusBadRequest,
	} {
		if r := p.get(t, path); r.Status != want {
			t.Errorf("%s: %d %s, want %d", path, r.Status, r.Body, want)
		}
	}
	if r := startCatalog(t, "", Options{}).get(t, "/catalog/tofu"); r.Status != http.StatusBadRequest {
		t.Errorf("without --tofu-repository: %d %s, want 400", r.Status, r.Body)
	}
}

// OpenTofu releases are in a client's catalogue as TofuDL serves them to
// it: with tofu = true only; otherwise not listed, and their page is a
// 404, after the others warmed every cache.
func TestCatalogTofuIsScoped(t *testing.T) {
	ref, repo := tofuLayout(t)
	pushTofuFixture(t, repo, "1.9.0")
	const withTofu, without, admin = "token-with-tofu", "token-without", "operator-token"
	p := startProxy(t, Options{TofuRepository: &ref, AuthTokens: []string{admin}, Policy: mustPolicy(t, fmt.Sprintf(`
client "ci" {
  tokens = [%q]
  tofu   = true
}
client "team" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
}
`, policy.TokenHash(withTofu), policy.TokenHash(without)))})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	for _, token := range []string{admin, withTofu} {
		for _, path := range []string{"/catalog/", "/catalog/?kind=tofu", "/catalog/tofu", "/catalog/tofu/1.9.0"} {
			if _, r := getCatalog[struct{}](t, p, path, as(token)); r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
		}
	}
	if idx, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/", as(withTofu)); idx.Tofu == nil || idx.Tofu.Versions != 1 {
		t.Errorf("ci's index: tofu %+v", idx.Tofu)
	}
	for _, path := range []string{"/catalog/", "/catalog/?kind=tofu"} {
		idx, r := getCatalog[catalog.IndexPage](t, p, path, as(without))
		if r.Status != http.StatusOK || idx.Tofu != nil || strings.Contains(string(r.Body), "1.9.0") {
			t.Errorf("team's %s: %d %s", path, r.Status, r.Body)
		}
	}
	for _, path := range []string{"/catalog/tofu", "/catalog/tofu/1.9.0"} {
		if r := p.do(t, http.MethodGet, path, as(without)); r.Status != http.StatusNotFound || strings.Contains(string(r.Body), "1.9.0\"") {
			t.Errorf("team's %s: %d %s, want 404 as /tofu/api.json answers it", path, r.Status, r.Body)
		}
	}
	if r := p.do(t, http.MethodGet, "/tofu/api.json", as(without)); r.Status != http.StatusNotFound {
		t.Errorf("team's api.json: %d (the catalogue follows it)", r.Status)
	}
}

// Providers are filtered as modules are: by namespace, by address (the
// provider= filter), by the status of their newest version held, within
// the caller's scope only.
func TestCatalogFiltersProviders(t *testing.T) {
	const tokenA = "token-of-a"
	p, _ := startProviderCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{"operator-token"}})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	for query, want := range map[string][2]string{ // the operator's, a's
		"status=deprecated":                    {"example.com/team-a/hello", "example.com/team-a/hello"},
		"status=served":                        {"example.com/team-b/hello", ""},
		"status=denied":                        {"", ""},
		"namespace=Team-B":                     {"example.com/team-b/hello", ""},
		"provider=example.com/team-a/hello":    {"example.com/team-a/hello", "example.com/team-a/hello"},
		"provider=example.com/team-b/HELLO":    {"example.com/team-b/hello", ""},
		"q=hello&namespace=team-a":             {"example.com/team-a/hello", "example.com/team-a/hello"},
		"q=team-b&status=served&kind=provider": {"example.com/team-b/hello", ""},
		"kind=module&namespace=team-a":         {"", ""},
	} {
		for i, token := range []string{"operator-token", tokenA} {
			idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+query, as(token))
			var got []string
			for _, e := range idx.Providers {
				got = append(got, e.Address)
			}
			if r.Status != http.StatusOK || strings.Join(got, " ") != want[i] || idx.ProviderTotal != len(got) || (i == 1 && strings.Contains(string(r.Body), `"address":"example.com/team-b`)) {
				t.Errorf("?%s as %d: %d %q (total %d), want %q\n%s", query, i, r.Status, got, idx.ProviderTotal, want[i], r.Body)
			}
		}
	}
}

// Viewing pages never evicts what searches read: whole interfaces (with
// their READMEs) share a small cache with SBOM findings, while a search
// keeps only what it reads of each module in a cache of its own. With
// --cache-bytes so small that a few whole interfaces fill theirs, a
// search after every module's page was viewed still reads nothing.
func TestCatalogSearchOutlivesPageViews(t *testing.T) {
	reg := testenv.StartRegistry(t)
	const modules = 30
	readme := strings.Repeat("A paragraph about the VPC that the README has. ", 100)
	for i := 0; i < modules; i++ {
		z := zipOf(t, map[string]string{"README.md": readme, "main.tf": fmt.Sprintf("variable \"cidr_%02d\" {\n  type = string\n}\n", i)})
		push(t, registryRepo(t, reg, fmt.Sprintf("modules/acme/net%02d/aws", i)), moduleArtifact(t, z), "1.0.0")
	}
	fp := newFaultProxy(t, reg)
	plain, err := oci.NewClient(oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{Client: plain, RegistryHostname: "example.com", CacheBytes: 2 << 20,
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, fp.host()+"/modules/${namespace}/${name}/${system}")}})
	search := func() {
		t.Helper()
		if idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=cidr", nil); r.Status != http.StatusOK || idx.Total != modules {
			t.Fatalf("search: %d, %d found, want %d", r.Status, idx.Total, modules)
		}
	}
	search()
	for i := 0; i < modules; i++ {
		if _, r := getCatalog[catalog.ModulePage](t, p, fmt.Sprintf("/catalog/modules/example.com/acme/net%02d/aws", i), nil); r.Status != http.StatusOK {
			t.Fatalf("page of net%02d: %d", i, r.Status)
		}
	}
	before := fp.count("")
	search()
	if n := fp.count("") - before; n != 0 {
		t.Errorf("a warm search after the pages were viewed made %d registry requests, want none", n)
	}
}
