package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// Under --registry-decides the OpenTofu releases' catalogue is the
// registry's to grant: a caller whose registry credential cannot read
// the tofu repository sees no tofu entry in the index and a 404 for its
// pages, before and after one who can (and sees them) warmed the caches.
func TestCatalogTofuUnderRegistryDecides(t *testing.T) {
	reg := teamRegistry(t)
	reg.Token.AddUser("carol", "carol-Pa55", "tools/")
	repo, err := proxyClient(t, reg).Open(oci.Reference{Registry: reg.Host, Repository: "tools/opentofu"})
	if err != nil {
		t.Fatal(err)
	}
	pushTofuFixture(t, repo, "1.9.0")
	p := registryDecidesProxy(t, reg, Options{TofuRepository: &oci.Reference{Registry: reg.Host, Repository: "tools/opentofu"}})
	alice, carol := bearer("alice:alice-Pa55"), bearer("carol:carol-Pa55")
	refused := func(when string) {
		t.Helper()
		for _, path := range []string{"/catalog/", "/catalog/?kind=tofu", "/catalog/?q=opentofu"} {
			idx, r := getCatalog[catalog.IndexPage](t, p, path, alice)
			if r.Status != http.StatusOK || idx.Tofu != nil || strings.Contains(string(r.Body), "1.9.0") {
				t.Errorf("alice's %s %s: %d %s", path, when, r.Status, r.Body)
			}
		}
		for _, path := range []string{"/catalog/tofu", "/catalog/tofu/1.9.0"} {
			if r := p.do(t, http.MethodGet, path, alice); r.Status != http.StatusNotFound || strings.Contains(string(r.Body), "1.9.0\"") {
				t.Errorf("alice's %s %s: %d %s, want 404", path, when, r.Status, r.Body)
			}
		}
	}
	refused("cold")
	idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/", carol)
	if r.Status != http.StatusOK || idx.Tofu == nil || idx.Tofu.Latest != "1.9.0" || idx.Tofu.Versions != 1 {
		t.Fatalf("carol's index: %d %+v\n%s", r.Status, idx.Tofu, r.Body)
	}
	for _, path := range []string{"/catalog/tofu", "/catalog/tofu/1.9.0"} {
		if d, r := getCatalog[catalog.TofuPage](t, p, path, carol); r.Status != http.StatusOK || d.Version != "1.9.0" {
			t.Errorf("carol's %s: %d %s", path, r.Status, r.Body)
		}
	}
	refused("after carol warmed the caches")
}
