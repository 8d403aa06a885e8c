package proxy

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// zipOf is a module package holding files.
func zipOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(mapKeys(files)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// vpcModule is a module package with an interface to show: inputs,
// outputs, a provider requirement, a resource, a submodule, an example
// and a README with script in it.
func vpcModule(t testing.TB, version string) []byte {
	return zipOf(t, map[string]string{
		"main.tf": fmt.Sprintf(`
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}
variable "cidr" {
  type        = string
  description = "The VPC's CIDR block"
  validation {
    condition     = can(cidrhost(var.cidr, 0))
    error_message = "cidr must be a CIDR block."
  }
}
variable "tags" {
  type    = map(string)
  default = {}
}
resource "aws_vpc" "this" { cidr_block = var.cidr }
output "vpc_id" {
  value       = aws_vpc.this.id
  description = "The VPC's id (%s)"
}
`, version),
		"README.md":               "# VPC\n\nMakes a VPC.<script>alert(1)</script> See [the subnets](modules/subnets).\n",
		"modules/subnets/main.tf": `variable "vpc_id" { type = string }` + "\n",
		"examples/simple/main.tf": "module \"vpc\" {\n  source = \"../..\"\n  cidr   = \"10.0.0.0/16\"\n}\n",
	})
}

// startCatalog serves modules held in an OCI layout, never served before:
// acme/vpc/aws 1.0.0, 1.1.0 (deprecated) and 2.0.0 (denied), and
// others/dns/aws 0.3.0, with the policy extra adds.
func startCatalog(t *testing.T, extra string, opts Options) *proxy {
	t.Helper()
	mdir, mopen := moduleStore(t)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		push(t, mopen("acme", "vpc", "aws"), moduleArtifact(t, vpcModule(t, v)), v)
	}
	push(t, mopen("others", "dns", "aws"), moduleArtifact(t, moduleZip(t, "0.3.0")), "0.3.0")
	opts.ModuleMappings = []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}
	opts.RegistryHostname = "example.com"
	opts.Policy = mustPolicy(t, `
module "example.com/acme/vpc/aws" {
  deny = ["2.0.0"]
  deprecated {
    versions = "1.1.0"
    message  = "use 1.0.0"
  }
}
`+extra)
	return startProxy(t, opts)
}

func getCatalog[T any](t *testing.T, p *proxy, path string, header map[string]string) (T, response) {
	t.Helper()
	var v T
	h := map[string]string{"Accept": "application/json"}
	for k, val := range header {
		h[k] = val
	}
	r := p.do(t, http.MethodGet, path, h)
	if r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, r.Body)
		}
	}
	return v, r
}

// The index lists every module the registry holds from a cold start,
// not only what was served, with its newest served version.
func TestCatalogListsWhatIsHeld(t *testing.T) {
	p := startCatalog(t, "", Options{})
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("index: %d %s", r.Status, r.Body)
	}
	var got []string
	for _, m := range idx.Modules {
		got = append(got, m.Address+"@"+m.Latest)
	}
	want := []string{"example.com/acme/vpc/aws@1.1.0", "example.com/others/dns/aws@0.3.0"}
	if !slices.Equal(got, want) || idx.Total != 2 {
		t.Errorf("index lists %v (total %d), want %v", got, idx.Total, want)
	}
	found, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=DNS", nil)
	if len(found.Modules) != 1 || found.Modules[0].Name != "dns" {
		t.Errorf("?q=DNS found %+v", found.Modules)
	}
	for q, want := range map[string]string{
		"cidr":          "example.com/acme/vpc/aws input cidr",
		"aws_vpc":       "example.com/acme/vpc/aws resource aws_vpc",
		"VPC's CIDR":    "example.com/acme/vpc/aws description The VPC's CIDR block input cidr",
		"version":       "example.com/others/dns/aws output version",
		"dns version":   "example.com/others/dns/aws output version",
		"hashicorp/aws": "example.com/acme/vpc/aws provider registry.opentofu.org/hashicorp/aws",
		"acme":          "example.com/acme/vpc/aws",
		"nowhere":       "",
	} {
		found, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?q="+url.QueryEscape(q), nil)
		var got []string
		for _, m := range found.Modules {
			g := m.Address
			for _, h := range m.Hits {
				g += " " + h.Where + " " + h.Text
			}
			got = append(got, g)
		}
		if strings.Join(got, ";") != want || r.Status != http.StatusOK {
			t.Errorf("?q=%s: %d %q, want %q", q, r.Status, got, want)
		}
	}
	html := p.get(t, "/catalog/")
	if html.Status != http.StatusOK || !strings.Contains(string(html.Body), `href="modules/example.com/acme/vpc/aws"`) {
		t.Errorf("index page: %d\n%s", html.Status, html.Body)
	}
}

// A module's page shows the newest served version's interface, each
// version's status under the policy, a usage snippet, and the README
// without its script.
func TestCatalogModulePage(t *testing.T) {
	p := startCatalog(t, "", Options{})
	d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("module page: %d %s", r.Status, r.Body)
	}
	if d.Version != "1.1.0" || d.Latest != "1.1.0" {
		t.Errorf("version %s, latest %s; want 1.1.0 (2.0.0 is denied)", d.Version, d.Latest)
	}
	var statuses []string
	for _, v := range d.Versions {
		statuses = append(statuses, v.Version+" "+v.Status)
	}
	if want := []string{"2.0.0 denied", "1.1.0 deprecated", "1.0.0 served"}; !slices.Equal(statuses, want) {
		t.Errorf("versions %v, want %v", statuses, want)
	}
	// The denied version's rule and reason are those its download is
	// refused with.
	download := p.get(t, "/v1/modules/acme/vpc/aws/2.0.0/download")
	if denied := d.Versions[0]; denied.Rule == "" || !strings.Contains(denied.Reason, "2.0.0 is denied by the policy's rule") ||
		download.Status != http.StatusNotFound || !strings.Contains(string(download.Body), strings.ReplaceAll(denied.Reason, `"`, `\"`)) {
		t.Errorf("denied 2.0.0: rule %q, reason %q; download %d %s", denied.Rule, denied.Reason, download.Status, download.Body)
	}
	var inputs []string
	for _, in := range d.Module.Inputs {
		inputs = append(inputs, fmt.Sprintf("%s:%s:%v", in.Name, in.Type, in.Required))
	}
	if want := []string{"cidr:string:true", "tags:map(string):false"}; !slices.Equal(inputs, want) {
		t.Errorf("inputs %v, want %v", inputs, want)
	}
	if len(d.Module.Outputs) != 1 || d.Module.Outputs[0].Description != "The VPC's id (1.1.0)" {
		t.Errorf("outputs %+v: not 1.1.0's", d.Module.Outputs)
	}
	if d.Usage == nil || !strings.Contains(d.Usage.Registry, `source  = "example.com/acme/vpc/aws"`) || !strings.Contains(d.Usage.Registry, `version = "~> 1.1"`) ||
		!strings.Contains(d.Usage.Registry, `cidr = ""`) || d.Usage.OCI != "" /* a layout: oci:// reads registries */ {
		t.Errorf("usage %+v", d.Usage)
	}
	if len(d.Submodules) != 1 || d.Submodules[0].Dir != "modules/subnets" || len(d.Examples) != 1 {
		t.Errorf("submodules %+v, examples %+v", d.Submodules, d.Examples)
	}
	page := p.get(t, "/catalog/modules/example.com/acme/vpc/aws/1.0.0")
	body := string(page.Body)
	if page.Status != http.StatusOK || strings.Contains(body, "<script") || !strings.Contains(body, "Makes a VPC") {
		t.Errorf("page: %d, script dropped and README shown?\n%s", page.Status, body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	sub, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws/1.0.0/modules/subnets", nil)
	if r.Status != http.StatusOK || len(sub.Module.Inputs) != 1 || sub.Module.Inputs[0].Name != "vpc_id" || !strings.Contains(sub.Usage.Registry, "//modules/subnets") {
		t.Errorf("submodule: %d %+v", r.Status, sub)
	}
	for path, want := range map[string]int{
		"/catalog/modules/example.com/acme/vpc/aws/2.0.0":                http.StatusNotFound, // denied: its reason, as the protocol says it
		"/catalog/modules/example.com/acme/vpc/aws/9.9.9":                http.StatusNotFound,
		"/catalog/modules/example.com/acme/vpc/aws/1.0.0/modules/absent": http.StatusNotFound,
		"/catalog/modules/example.com/acme/absent/aws":                   http.StatusNotFound,
		"/catalog/modules/example.com/acme/vpc/aws/1.0.0/secrets/x":      http.StatusBadRequest,
		"/catalog/modules/example.com/acme/vpc":                          http.StatusBadRequest,
		"/catalog/providers/example.com/acme/vpc":                        http.StatusBadRequest,
	} {
		if r := p.get(t, path); r.Status != want {
			t.Errorf("%s: %d %s, want %d", path, r.Status, r.Body, want)
		}
	}
}

// A client that reads only some modules sees, counts and finds only
// those, by every URL, after another client warmed every cache.
func TestCatalogIsScoped(t *testing.T) {
	const tokenA, admin = "token-of-acme", "operator-token"
	p := startCatalog(t, fmt.Sprintf(`
client "acme" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{admin}})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	paths := []string{"/catalog/", "/catalog/?q=dns", "/catalog/modules/example.com/others/dns/aws", "/catalog/modules/example.com/others/dns/aws/0.3.0",
		"/catalog/modules/example.com/acme/vpc/aws"}
	for _, path := range paths {
		if _, r := getCatalog[json.RawMessage](t, p, path, as(admin)); r.Status != http.StatusOK {
			t.Fatalf("operator %s: %d %s", path, r.Status, r.Body)
		}
	}
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", as(tokenA))
	if r.Status != http.StatusOK || idx.Total != 1 || len(idx.Modules) != 1 || idx.Modules[0].Namespace != "acme" || !idx.Complete || len(idx.Coverage) != 0 {
		t.Errorf("acme's index: %d %+v (the mappings are the operator's)", r.Status, idx)
	}
	if all, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/", as(admin)); len(all.Coverage) != 1 || !all.Coverage[0].Listed || !strings.HasPrefix(all.Coverage[0].Template, "oci-layout:") {
		t.Errorf("the operator's coverage: %+v", all.Coverage)
	}
	if strings.Contains(string(r.Body), "others") || strings.Contains(string(p.do(t, http.MethodGet, "/catalog/", as(tokenA)).Body), "others") {
		t.Errorf("acme's index names another team's module:\n%s", r.Body)
	}
	for _, q := range []string{"dns", "version", "others"} {
		found, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?q="+q, as(tokenA))
		if found.Total != 0 || len(found.Modules) != 0 {
			t.Errorf("acme finds %q: %+v", q, found)
		}
		if all, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?q="+q, as(admin)); all.Total != 1 {
			t.Errorf("the operator finds %q: %+v", q, all)
		}
	}
	for _, path := range paths[2:4] {
		if _, r := getCatalog[json.RawMessage](t, p, path, as(tokenA)); r.Status != http.StatusNotFound {
			t.Errorf("acme %s: %d, want 404 as for a module that does not exist", path, r.Status)
		}
	}
	if r := p.get(t, "/catalog/"); r.Status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.Status)
	}
}

func TestCatalogFromThePage(t *testing.T) {
	p := startCatalog(t, "", Options{})
	if r := p.get(t, "/"); !strings.Contains(string(r.Body), `/catalog/">Catalogue</a>`) {
		t.Errorf("the page does not lead to the catalogue:\n%s", r.Body)
	}
}

// An interface stored beside the package is what the page shows: the
// package is not read (here the stored interface differs from the zip's,
// which only a stored one could make it).
func TestCatalogShowsTheStoredInterface(t *testing.T) {
	mdir, mopen := moduleStore(t)
	repo := mopen("acme", "vpc", "aws")
	art := moduleArtifact(t, vpcModule(t, "1.0.0"))
	push(t, repo, art, "1.0.0")
	doc, err := moduledoc.FromZip(context.Background(), bytes.NewReader(moduleZip(t, "other")), int64(len(moduleZip(t, "other"))))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := moduledoc.Attach(context.Background(), repo, art.Root(), doc); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{RegistryHostname: "example.com",
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws/1.0.0", nil)
	if r.Status != http.StatusOK || d.Interface != catalog.HowStored || len(d.Module.Inputs) != 0 || len(d.Module.Outputs) != 1 || d.Module.Outputs[0].Name != "version" {
		t.Errorf("%d: interface %s, inputs %+v, outputs %+v; want the stored one (output version only)", r.Status, d.Interface, d.Module.Inputs, d.Module.Outputs)
	}
}

// A browser signs in to the catalogue with the token as a Basic
// password, and is asked to; it reads what the bearer token would read.
// Nothing but the catalogue takes Basic.
func TestCatalogSignInFromABrowser(t *testing.T) {
	const tokenA, admin = "token-of-acme", "operator-token"
	p := startCatalog(t, fmt.Sprintf(`
client "acme" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{admin}})
	basic := func(user, password string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
	}
	r := p.get(t, "/catalog/")
	if challenges := r.Header.Values("WWW-Authenticate"); r.Status != http.StatusUnauthorized || !slices.Contains(challenges, `Basic realm="oci-tofu catalogue", charset="UTF-8"`) || !slices.ContainsFunc(challenges, func(c string) bool { return strings.HasPrefix(c, "Bearer ") }) {
		t.Errorf("without a credential: %d, challenges %q", r.Status, challenges)
	}
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", basic("anyone", tokenA))
	if r.Status != http.StatusOK || idx.Total != 1 || idx.Modules[0].Namespace != "acme" || r.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("acme signed in: %d %+v, WWW-Authenticate %q", r.Status, idx, r.Header.Get("WWW-Authenticate"))
	}
	if _, r := getCatalog[json.RawMessage](t, p, "/catalog/modules/example.com/others/dns/aws", basic("", tokenA)); r.Status != http.StatusNotFound {
		t.Errorf("acme signed in reads another team's module: %d", r.Status)
	}
	if all, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", basic("x", admin)); r.Status != http.StatusOK || all.Total != 2 {
		t.Errorf("the operator signed in: %d %+v", r.Status, all)
	}
	for _, h := range []map[string]string{basic("anyone", "wrong"), basic(tokenA, ""), {"Authorization": "Basic !!!"}} {
		if r := p.do(t, http.MethodGet, "/catalog/", h); r.Status != http.StatusUnauthorized || !slices.Contains(r.Header.Values("WWW-Authenticate"), basicRealm) {
			t.Errorf("%v: %d %q", h, r.Status, r.Header.Values("WWW-Authenticate"))
		}
	}
	for _, path := range []string{"/v1/modules/acme/vpc/aws/versions", "/v1/whoami"} {
		if r := p.do(t, http.MethodGet, path, basic("anyone", tokenA)); r.Status != http.StatusUnauthorized || slices.Contains(r.Header.Values("WWW-Authenticate"), basicRealm) {
			t.Errorf("%s takes Basic: %d %q", path, r.Status, r.Header.Values("WWW-Authenticate"))
		}
	}
}

// Without --registry-hostname, addresses and snippets name the host and
// port the client reached the proxy by, as tofu needs them; the page's
// URLs keep the registry hostname (no port).
func TestCatalogAddressesAsClientsWriteThem(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "vpc", "aws"), moduleArtifact(t, vpcModule(t, "1.0.0")), "1.0.0")
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	hostport := strings.TrimPrefix(p.URL, "https://")
	idx, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/", nil)
	if len(idx.Modules) != 1 || idx.Modules[0].Address != hostport+"/acme/vpc/aws" || idx.Modules[0].URL != "modules/127.0.0.1/acme/vpc/aws" {
		t.Fatalf("index %+v, want address %s/acme/vpc/aws", idx.Modules, hostport)
	}
	d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/"+idx.Modules[0].URL, nil)
	if r.Status != http.StatusOK || d.Address != hostport+"/acme/vpc/aws" || !strings.Contains(d.Usage.Registry, `"`+hostport+`/acme/vpc/aws"`) {
		t.Errorf("%d: address %s, usage %s", r.Status, d.Address, d.Usage.Registry)
	}
}
