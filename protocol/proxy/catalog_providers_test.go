package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// startProviderCatalog serves providers held in OCI layouts, never
// served before: team-a/hello 1.0.0, 1.1.0 (deprecated), 2.0.0-rc1 (denied)
// and team-b/hello 1.0.0.
func startProviderCatalog(t *testing.T, extra string, opts Options) (*proxy, string) {
	t.Helper()
	dir, open := layoutStore(t)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		push(t, open("team-a", "hello"), releaseArtifact(t, v), v)
	}
	push(t, open("team-b", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	opts.ProviderMappings = mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	opts.RegistryHostname = "example.com"
	opts.Policy = mustPolicy(t, `
provider "example.com/team-a/hello" {
  deny = ["2.0.0-rc1"]
  deprecated {
    versions = "1.1.0"
    message  = "use 1.0.0"
  }
}
`+extra)
	return startProxy(t, opts), dir
}

// Held providers are listed from a cold start; a provider's page shows
// each version's status, the release and the lock block.
func TestCatalogListsHeldProviders(t *testing.T) {
	p, _ := startProviderCatalog(t, "", Options{})
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", nil)
	var got []string
	for _, e := range idx.Providers {
		got = append(got, fmt.Sprintf("%s@%s/%d", e.Address, e.Latest, e.Versions))
	}
	if want := []string{"example.com/team-a/hello@1.1.0/2", "example.com/team-b/hello@1.0.0/1"}; r.Status != http.StatusOK || !slices.Equal(got, want) || idx.ProviderTotal != 2 {
		t.Errorf("index: %d %v, want %v\n%s", r.Status, got, want, r.Body)
	}
	if found, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=team-b", nil); len(found.Providers) != 1 || found.Providers[0].Namespace != "team-b" {
		t.Errorf("?q=team-b: %+v", found.Providers)
	}
	if mods, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?kind=module", nil); len(mods.Providers) != 0 {
		t.Errorf("?kind=module lists providers: %+v", mods.Providers)
	}
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-a/hello", nil)
	var statuses []string
	for _, v := range d.Versions {
		statuses = append(statuses, v.Version+" "+v.Status+" "+v.Message)
	}
	if want := []string{"2.0.0-rc1 denied ", "1.1.0 deprecated use 1.0.0", "1.0.0 served "}; r.Status != http.StatusOK || !slices.Equal(statuses, want) || d.Version != "1.1.0" {
		t.Errorf("page: %d version %s statuses %q, want %q\n%s", r.Status, d.Version, statuses, want, r.Body)
	}
	if len(d.Platforms) == 0 || d.Lock == "" || !strings.HasPrefix(d.SBOM, "../../../../sbom/example.com/team-a/hello/1.1.0") {
		t.Errorf("page: platforms %v, lock %q (%s), sbom %q", d.Platforms, d.Lock, d.LockProblem, d.SBOM)
	}
	if r := p.get(t, "/catalog/providers/example.com/team-a/hello/2.0.0-rc1"); r.Status != http.StatusNotFound {
		t.Errorf("denied version: %d", r.Status)
	}
	if html := p.get(t, "/catalog/providers/example.com/team-a/hello/1.0.0"); html.Status != http.StatusOK || !strings.Contains(string(html.Body), `id="lock-snippet"`) {
		t.Errorf("page HTML: %d\n%s", html.Status, html.Body)
	}
}

// The lock block equals convert/lockfile's for the same release and
// platform.
func TestCatalogProviderLockIsLocks(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-b/hello/1.0.0?platform="+"linux_amd64", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := names.ParseProvider("example.com/team-b/hello")
	cs, err := names.ParseConstraints("~> 1.0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := lockfile.Lock(context.Background(), []tfconfig.Requirement{{Addr: addr, Constraints: cs}}, nil, lockfile.Options{
		Template: mustTemplate(t, "oci-layout:"+dir+"/${namespace}/${type}"), Platforms: []names.Platform{{OS: "linux", Arch: "amd64"}},
		Open: func(ctx context.Context, ref oci.Reference) (oci.ReadOnlyRepository, error) {
			return c.OpenReadOnly(ctx, ref)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if want := string(lf.Providers[0].Bytes()); d.Lock != want || !strings.Contains(d.Lock, "h1:") {
		t.Errorf("lock block\n%s\nwant oci-tofu lock's\n%s", d.Lock, want)
	}
}

// A client reading only team-a's providers sees only those, by every
// URL, after the operator warmed the caches.
func TestCatalogProvidersAreScoped(t *testing.T) {
	const tokenA, admin = "token-of-a", "operator-token"
	p, _ := startProviderCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{admin}})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	others := []string{"/catalog/providers/example.com/team-b/hello", "/catalog/providers/example.com/team-b/hello/1.0.0"}
	for _, path := range append([]string{"/catalog/", "/catalog/?q=team-b"}, others...) {
		if _, r := getCatalog[struct{}](t, p, path, as(admin)); r.Status != http.StatusOK {
			t.Fatalf("operator %s: %d %s", path, r.Status, r.Body)
		}
	}
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", as(tokenA))
	if r.Status != http.StatusOK || idx.ProviderTotal != 1 || len(idx.Providers) != 1 || strings.Contains(string(r.Body), "team-b") {
		t.Errorf("a's index: %d %s", r.Status, r.Body)
	}
	if found, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=team-b", as(tokenA)); found.ProviderTotal != 0 {
		t.Errorf("a finds team-b: %+v", found)
	}
	for _, path := range others {
		if _, r := getCatalog[struct{}](t, p, path, as(tokenA)); r.Status != http.StatusNotFound {
			t.Errorf("a %s: %d, want 404", path, r.Status)
		}
	}
}

// A provider's page exists only under the host the mappings hold it by:
// a template without ${hostname} must not show the proxy's providers
// under any host a link names.
func TestCatalogNoProviderPageUnderAnotherHost(t *testing.T) {
	p, _ := startProviderCatalog(t, "", Options{})
	idx, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/", nil)
	if len(idx.Providers) == 0 {
		t.Fatal("no provider listed")
	}
	own := idx.Providers[0]
	if _, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/"+own.URL, nil); r.Status != http.StatusOK {
		t.Fatalf("%s: %d %s", own.URL, r.Status, r.Body)
	}
	other := strings.Replace(own.URL, "/"+own.Host+"/", "/evil.example/", 1)
	if _, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/"+other, nil); r.Status != http.StatusNotFound {
		t.Errorf("%s: %d %s, want 404", other, r.Status, r.Body)
	}
}
