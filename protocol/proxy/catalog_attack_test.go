package proxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"net/http"
	"net/url"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/logins"
)

// snippetBlock parses a usage snippet as a user pasting it would, and
// returns its one block's attributes: the snippet must be one module
// block whose source is a literal string (no interpolation a package
// could slip into it).
func snippetBlock(t *testing.T, what, snippet string) hclsyntax.Attributes {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(snippet), "snippet.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Errorf("%s does not parse: %v\n%s", what, diags, snippet)
		return nil
	}
	body := f.Body.(*hclsyntax.Body)
	if len(body.Blocks) != 1 || len(body.Attributes) != 0 || body.Blocks[0].Type != "module" {
		t.Errorf("%s is not one module block:\n%s", what, snippet)
		return nil
	}
	attrs := body.Blocks[0].Body.Attributes
	if src, ok := attrs["source"]; !ok {
		t.Errorf("%s has no source", what)
	} else if _, ok := src.Expr.(*hclsyntax.TemplateExpr); !ok || !src.Expr.(*hclsyntax.TemplateExpr).IsStringLiteral() {
		t.Errorf("%s: the source is not a literal string:\n%s", what, snippet)
	}
	return attrs
}

// Finding: the usage snippet a user copies is built from the package's
// interface. A type constraint written over several lines (its text as
// written goes in a comment) ended the comment and put the rest of the
// type, or whatever a package wrote there, into the module block; a
// submodule directory named "${...}" became an interpolation in the
// source string. The snippet must stay one module block setting only
// source, version and the required inputs.
func TestCatalogUsageSnippetCannotBeInjected(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "net", "aws"), moduleArtifact(t, zipOf(t, map[string]string{
		"main.tf": `
variable "network" {
  type = object({
    cidr = string
  })
  description = "The network"
}
variable "zone" {
  type = string # } module "evil" { source = "evil.example/x/y/z" }
}
`,
		"modules/${path.cwd}/main.tf": `variable "name" { type = string }` + "\n",
	})), "1.0.0")
	p := startProxy(t, Options{RegistryHostname: "example.com",
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	for _, path := range []string{
		"/catalog/modules/example.com/acme/net/aws/1.0.0",
		"/catalog/modules/example.com/acme/net/aws/1.0.0/modules/" + url.PathEscape("${path.cwd}"),
	} {
		d, r := getCatalog[catalog.ModulePage](t, p, path, nil)
		if r.Status != http.StatusOK || d.Usage == nil {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		if d.Usage.OCI != "" {
			t.Errorf("%s: an oci:// snippet for a layout directory", path)
		}
		for what, snippet := range map[string]string{"registry snippet": d.Usage.Registry} { // the oci:// one: TestUsageQuotesEverything
			attrs := snippetBlock(t, path+" "+what, snippet)
			for name := range attrs {
				switch name {
				case "source", "version", "network", "zone", "name":
				default:
					t.Errorf("%s %s sets %s:\n%s", path, what, name, snippet)
				}
			}
		}
	}
}

// Finding: with a module template without ${hostname}, every host's
// address maps to the same repository, and the catalogue took the host
// from the page's path: /catalog/modules/evil.example/acme/vpc/aws
// showed acme/vpc/aws's versions and interface with snippets whose
// source is evil.example/acme/vpc/aws (a link that makes a user copy
// a source on another registry), and a client whose scope names
// another host (registry.terraform.io/*/*/*) read the proxy's own
// modules under that host. Only the registry hostname the index lists
// them under is a module's page.
func TestCatalogModuleHostIsTheRegistryHostname(t *testing.T) {
	const token = "token-of-public"
	p := startCatalog(t, fmt.Sprintf(`
client "public" {
  tokens  = [%q]
  modules = ["registry.terraform.io/*/*/*"]
}
`, policy.TokenHash(token)), Options{})
	bearer := map[string]string{"Authorization": "Bearer " + token}
	for _, path := range []string{
		"/catalog/modules/registry.terraform.io/others/dns/aws",
		"/catalog/modules/registry.terraform.io/others/dns/aws/0.3.0",
		"/catalog/modules/registry.terraform.io/acme/vpc/aws/1.0.0/modules/subnets",
	} {
		if _, r := getCatalog[json.RawMessage](t, p, path, bearer); r.Status != http.StatusNotFound {
			t.Errorf("a client reading registry.terraform.io/*/*/* reads %s: %d %s", path, r.Status, r.Body)
		}
	}
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", bearer)
	if r.Status != http.StatusOK || idx.Total != 0 {
		t.Errorf("index of a client reading registry.terraform.io/*/*/*: %d %+v", r.Status, idx)
	}
}

// The same, without client authentication: a page under another host
// is a 404, and the proxy's own hostname still serves it.
func TestCatalogNoPageUnderAnotherHost(t *testing.T) {
	p := startCatalog(t, "", Options{})
	if d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/evil.example/acme/vpc/aws", nil); r.Status != http.StatusNotFound {
		t.Errorf("evil.example/acme/vpc/aws: %d, snippet %+v", r.Status, d.Usage)
	}
	if _, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws", nil); r.Status != http.StatusOK {
		t.Errorf("example.com/acme/vpc/aws: %d %s", r.Status, r.Body)
	}
}

// Finding: with --registry-decides, the index asks the registry about
// every module held (one login each) at once. A user's first view of a
// catalogue of more modules than the logins' bounds allow at once
// (logins.DefaultAddressBurst for a credential not yet accepted) was a 429, and
// each login over the bound counted as a guess at the user's password,
// so that a few views shut the user's working credential out of every
// protocol for a cool-down; one view with a wrong password spent a login
// of the address's and the proxy's bounds per module (one request
// draining the logins of everyone else's credentials). A wrong password
// now costs one login and sees nothing; a right one sees its modules.
func TestCatalogRegistryDecidesIndexOfManyModules(t *testing.T) {
	reg := teamRegistry(t)
	const n = 3 * logins.DefaultAddressBurst
	for i := range n {
		pushTo(t, reg, fmt.Sprintf("modules/team-a/acme/m%02d/aws", i), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	}
	p := startProxy(t, Options{Client: proxyClient(t, reg), RegistryHostname: "example.com",
		ModuleMappings:  []*repotemplate.Template{mustModuleTemplate(t, reg.Host+"/modules/team-a/${namespace}/${name}/${system}")},
		RegistryDecides: true})
	basicOf := func(cred string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(cred))}
	}
	if idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", basicOf("bob:wrong")); r.Status != http.StatusOK || idx.Total != 0 || failedLogins(reg, "bob") != 1 {
		t.Errorf("a wrong password's index: %d total %d, %d logins refused (want 200, 0, 1)\n%.300s", r.Status, idx.Total, failedLogins(reg, "bob"), r.Body)
	}
	basic := basicOf("alice:alice-Pa55")
	for view := range 3 {
		idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", basic)
		if r.Status != http.StatusOK || idx.Total != n {
			t.Errorf("alice's index, view %d: %d total %d, want %d\n%.300s", view, r.Status, idx.Total, n, r.Body)
		}
	}
	if r := p.do(t, http.MethodGet, "/v1/modules/acme/m00/aws/versions", bearer("alice:alice-Pa55")); r.Status != http.StatusOK {
		t.Errorf("alice's versions after viewing the catalogue: %d %.300s", r.Status, r.Body)
	}
}
