package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// downloadVPC downloads version of acme/vpc/aws through the Module
// Registry Protocol, as a client with header would.
func downloadVPC(t *testing.T, p *proxy, version string, header map[string]string) {
	t.Helper()
	archive := p.moduleDownload(t, "/v1/modules/acme/vpc/aws/"+version+"/download", header)
	if got := p.get(t, archive); got.Status != http.StatusOK {
		t.Fatalf("module archive: %d %s", got.Status, got.Body)
	}
}

// startUsageCatalog is startCatalog with an operator token and a client
// "a" reading acme's modules only.
func startUsageCatalog(t *testing.T, tokenA string, opts Options) *proxy {
	t.Helper()
	opts.AuthTokens = []string{"operator-token"}
	return startCatalog(t, fmt.Sprintf(`
client "a" {
  tokens  = [%q]
  modules = ["example.com/acme/*/*"]
}
`, policy.TokenHash(tokenA)), opts)
}

// A module version's page counts its package's downloads as a
// provider's page does — the address's and the version's, from the audit
// trail's events of module downloads — shown only to a caller that
// reads everything: a scoped client's page has them null, even of the
// module it downloaded itself.
func TestCatalogModuleDownloads(t *testing.T) {
	const tokenA = "token-of-a"
	p := startUsageCatalog(t, tokenA, Options{})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	downloadVPC(t, p, "1.0.0", as(tokenA))
	downloadVPC(t, p, "1.0.0", as("operator-token"))
	downloadVPC(t, p, "1.1.0", as(tokenA))

	d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws/1.0.0", as("operator-token"))
	u := d.Downloads
	if r.Status != http.StatusOK || u == nil || u.Week != 3 || u.Month != 3 || u.Clients != 2 || u.From != "this replica's audit trail" {
		t.Fatalf("operator's page: %d %+v", r.Status, u)
	}
	if want := (catalog.VersionCounts{Version: "1.0.0", Week: 2, Month: 2, Clients: 2}); u.Version == nil || *u.Version != want {
		t.Errorf("1.0.0's downloads: %+v, want %+v", u.Version, want)
	}
	d, _ = getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws/1.1.0", as("operator-token"))
	if u := d.Downloads; u == nil || u.Week != 3 || u.Version == nil || *u.Version != (catalog.VersionCounts{Version: "1.1.0", Week: 1, Month: 1, Clients: 1}) {
		t.Errorf("1.1.0's downloads: %+v", u)
	}
	d, _ = getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/others/dns/aws/0.3.0", as("operator-token"))
	if u := d.Downloads; u == nil || u.Week != 0 || u.Clients != 0 || u.Version == nil || u.Version.Month != 0 {
		t.Errorf("a module never downloaded: %+v", u)
	}

	d, r = getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws/1.0.0", as(tokenA))
	if r.Status != http.StatusOK || d.Downloads != nil || !strings.Contains(string(r.Body), `"downloads":null`) {
		t.Errorf("a's page: %d %s", r.Status, r.Body)
	}
	html := p.do(t, http.MethodGet, "/catalog/modules/example.com/acme/vpc/aws/1.0.0", as("operator-token"))
	for _, want := range []string{`<span id="downloads-7d">3</span>`, `<span id="clients">2</span>`, `Version 1.0.0: <span id="version-downloads-7d">2</span>`, `<span id="version-clients">2</span>`} {
		if !strings.Contains(string(html.Body), want) {
			t.Errorf("the operator's page lacks %q:\n%s", want, html.Body)
		}
	}
	html = p.do(t, http.MethodGet, "/catalog/modules/example.com/acme/vpc/aws/1.0.0", as(tokenA))
	if html.Status != http.StatusOK || strings.Contains(string(html.Body), `id="downloads"`) {
		t.Errorf("a's page shows downloads: %d\n%s", html.Status, html.Body)
	}
}

// get_version_usage answers for a module too (module_id), and for a
// version asked about with that version's counts beside the address's;
// a scoped client is refused, for a module it reads as for one it does
// not, without a count.
func TestAssistantModuleUsage(t *testing.T) {
	const tokenA = "token-of-a"
	p := startUsageCatalog(t, tokenA, Options{MCP: &MCP{Loopback: true}})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	downloadVPC(t, p, "1.0.0", as(tokenA))
	downloadVPC(t, p, "1.1.0", as(tokenA))
	downloadVPC(t, p, "1.1.0", as("operator-token"))
	op := mcpSession(t, p, as("operator-token"))
	type usage struct {
		Kind    string              `json:"kind"`
		Address string              `json:"address"`
		Counts  catalog.UsageCounts `json:"counts"`
	}
	got, msg, isErr := callTool[usage](t, op, "get_version_usage", map[string]any{"module_id": "example.com/acme/vpc/aws", "version": "1.0.0"})
	if isErr || got.Kind != "module" || got.Address != "example.com/acme/vpc/aws" || got.Counts.Week != 3 || got.Counts.Clients != 2 {
		t.Fatalf("usage of acme/vpc/aws: %+v %s", got, msg)
	}
	if want := (catalog.VersionCounts{Version: "1.0.0", Week: 1, Month: 1, Clients: 1}); got.Counts.Version == nil || *got.Counts.Version != want {
		t.Errorf("usage of 1.0.0: %+v, want %+v", got.Counts.Version, want)
	}
	got, msg, isErr = callTool[usage](t, op, "get_version_usage", map[string]any{"module_id": "acme/vpc/aws/1.1.0"})
	if isErr || got.Counts.Version == nil || got.Counts.Version.Week != 2 || got.Counts.Version.Clients != 2 {
		t.Errorf("usage of acme/vpc/aws/1.1.0: %+v %s", got, msg)
	}
	got, msg, isErr = callTool[usage](t, op, "get_version_usage", map[string]any{"module_id": "example.com/acme/vpc/aws"})
	if isErr || got.Counts.Week != 3 || got.Counts.Version != nil {
		t.Errorf("usage of the module, no version asked: %+v %s", got, msg)
	}
	for _, args := range []map[string]any{
		{"module_id": "example.com/acme/vpc/aws", "namespace": "acme", "name": "vpc"},
		{},
		{"module_id": "example.com/acme/vpc/aws//modules/subnets/../x"},
	} {
		if _, msg, isErr := callTool[usage](t, op, "get_version_usage", args); !isErr || msg == "" {
			t.Errorf("%v: not refused (%s)", args, msg)
		}
	}

	a := mcpSession(t, p, as(tokenA))
	res, msg, isErr := callTool[map[string]any](t, a, "get_version_usage", map[string]any{"module_id": "example.com/acme/vpc/aws", "version": "1.0.0"})
	if b, _ := json.Marshal(res); !isErr || !strings.Contains(msg, "no usage of example.com/acme/vpc/aws is shown") || strings.Contains(string(b), "downloads") {
		t.Errorf("a's usage of its own module: %s %s", b, msg)
	}
	_, theirs, isErr := callTool[map[string]any](t, a, "get_version_usage", map[string]any{"module_id": "example.com/others/dns/aws", "version": "0.3.0"})
	_, none, _ := callTool[map[string]any](t, a, "get_version_usage", map[string]any{"module_id": "example.com/nobody/dns/aws", "version": "0.3.0"})
	if !isErr || strings.ReplaceAll(theirs, "others", "nobody") != none {
		t.Errorf("a is told of others' module otherwise than of none:\n%s\n%s", theirs, none)
	}
}
