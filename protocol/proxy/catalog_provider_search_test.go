package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// foundProviders is what an index lists of providers: their address,
// with where the search found its words.
func foundProviders(idx catalog.IndexPage) string {
	var out []string
	for _, e := range idx.Providers {
		s := e.Address
		for _, h := range e.Hits {
			s += " " + h.Where + ":" + h.Text
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// A search finds a provider by the resources and data sources its
// newest served version's documentation lists (TYPE_slug), below the
// providers its words are in the address of, saying where; a caller
// never finds a provider out of its scope that way, after another
// warmed every cache.
func TestCatalogSearchFindsProvidersByTheirDocs(t *testing.T) {
	const tokenA = "token-of-a"
	p, dir := startProviderCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{"operator-token"}})
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	widget, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/team-c/widget"})
	if err != nil {
		t.Fatal(err)
	}
	push(t, widget, releaseArtifact(t, "1.0.0"), "1.0.0")
	attachDocs(t, dir, "team-b", "hello", "1.0.0", hostileDocs) // resource and data source thing
	attachDocs(t, dir, "team-a", "hello", "1.1.0", map[string]string{"index.md": "# hello\n", "resources/widget.md": "# w\n", "data-sources/hello_gadget.md": "# g\n"})
	attachDocs(t, dir, "team-a", "hello", "1.0.0", map[string]string{"resources/old_only.md": "# not the newest served\n"})

	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	for q, want := range map[string][2]string{ // the operator's, a's
		"hello_thing":    {"example.com/team-b/hello resource:hello_thing", ""},
		"hello thing":    {"example.com/team-b/hello resource:hello_thing", ""},
		"widget":         {"example.com/team-c/widget, example.com/team-a/hello resource:hello_widget", "example.com/team-a/hello resource:hello_widget"},
		"hello_gadget":   {"example.com/team-a/hello data_source:hello_gadget", "example.com/team-a/hello data_source:hello_gadget"},
		"HELLO_Widget":   {"example.com/team-a/hello resource:hello_widget", "example.com/team-a/hello resource:hello_widget"},
		"hello":          {"example.com/team-a/hello, example.com/team-b/hello", "example.com/team-a/hello"},
		"hello_old_only": {"", ""},
		"thing widget":   {"", ""},
		"team-b":         {"example.com/team-b/hello", ""},
	} {
		for i, token := range []string{"operator-token", tokenA} {
			idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?kind=provider&q="+strings.ReplaceAll(q, " ", "+"), as(token))
			if got := foundProviders(idx); r.Status != http.StatusOK || got != want[i] || idx.ProviderTotal != len(idx.Providers) ||
				(i == 1 && strings.Contains(string(r.Body), `"address":"example.com/team-b`)) {
				t.Errorf("?q=%s as %d: %d %q (total %d), want %q\n%s", q, i, r.Status, got, idx.ProviderTotal, want[i], r.Body)
			}
		}
	}
	html := p.do(t, http.MethodGet, "/catalog/?q=hello_thing", as("operator-token"))
	if !strings.Contains(string(html.Body), `<span class="muted">resource: hello_thing</span>`) {
		t.Errorf("the index page does not say where:\n%s", html.Body)
	}
	if html := p.do(t, http.MethodGet, "/catalog/?q=hello_thing", as(tokenA)); strings.Contains(string(html.Body), "team-b/") || strings.Contains(string(html.Body), "hello_thing</span>") {
		t.Errorf("a's index page names team-b:\n%s", html.Body)
	}
}

// A warm provider search, by address or by documentation, reads nothing
// from the registry: the names a release's documentation lists are
// kept by its index's digest in the search's own cache.
func TestCatalogWarmProviderSearchReadsNothing(t *testing.T) {
	reg := testenv.StartRegistry(t)
	for _, a := range []string{"acme/widgets", "acme/gadgets", "others/tools"} {
		repo := registryRepo(t, reg, "providers/"+a)
		push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
		if a != "others/tools" {
			attachDocsTo(t, repo, "1.0.0", map[string]string{"resources/thing.md": "# thing\n", "data-sources/" + a[5:] + "_info.md": "# info\n"})
		}
	}
	fp := newFaultProxy(t, reg)
	plain, err := oci.NewClient(oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{Client: plain, RegistryHostname: "example.com", ProviderMappings: mustMapping(t, fp.host()+"/providers/${namespace}/${type}")})
	queries := map[string]int{"q=widgets_thing": 1, "q=thing": 2, "q=info&kind=provider": 2, "q=acme": 2, "q=nothing": 0, "q=tools": 1}
	for q, n := range queries {
		if idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+q, nil); r.Status != http.StatusOK || idx.ProviderTotal != n {
			t.Fatalf("cold ?%s: %d %d found, want %d\n%s", q, r.Status, idx.ProviderTotal, n, r.Body)
		}
	}
	before := fp.count("")
	if before == 0 {
		t.Fatal("the cold searches read nothing through the counting front")
	}
	for q := range queries {
		getCatalog[catalog.IndexPage](t, p, "/catalog/?"+q, nil)
	}
	if n := fp.count("") - before; n != 0 {
		t.Errorf("warm searches made %d registry requests, want none", n)
	}
}
