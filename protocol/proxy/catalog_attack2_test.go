package proxy

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// A scoped client never sees downloads, by any way of asking for a page
// that shows them: Basic credentials (the people's sign-in), JSON by
// ?format=json or by Accept, HTML by any other Accept, HEAD, the
// provider's page without a version, the index of providers; and no
// answer may be kept by a cache, after the operator saw every page.
func TestCatalogDownloadsReachNoScopedCallerByAnyRequest(t *testing.T) {
	const tokenA, admin = "token-of-a", "operator-token"
	p := startFactsCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{admin}})
	bearer := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	downloadHello(t, p, "1.0.0", bearer(tokenA))
	downloadHello(t, p, "1.0.0", bearer(admin))
	const page = "/catalog/providers/example.com/test/hello/1.0.0"
	paths := []string{page, page + "?format=json", "/catalog/providers/example.com/test/hello", "/catalog/?kind=provider", "/catalog/?q=hello"}
	accepts := []string{"application/json", "text/html", "*/*", "application/json, */*;q=0.1", ""}
	for _, path := range paths {
		for _, accept := range accepts {
			if r := p.do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer " + admin, "Accept": accept}); r.Status != http.StatusOK {
				t.Fatalf("operator %s (%s): %d", path, accept, r.Status)
			}
		}
	}
	if r := p.do(t, http.MethodGet, page+"?format=json", bearer(admin)); !strings.Contains(string(r.Body), `"downloads_7d":2`) {
		t.Fatalf("the operator's page shows no downloads: %s", r.Body)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("a:"+tokenA))
	for _, auth := range []string{"Bearer " + tokenA, "bearer " + tokenA, basic} {
		for _, path := range paths {
			for _, accept := range accepts {
				for _, method := range []string{http.MethodGet, http.MethodHead} {
					r := p.do(t, method, path, map[string]string{"Authorization": auth, "Accept": accept})
					body := string(r.Body)
					if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
						t.Errorf("%s %s (%s, %.12s): %d, Cache-Control %q", method, path, accept, auth, r.Status, r.Header.Get("Cache-Control"))
					}
					for _, leak := range []string{"downloads_7d", `id="downloads"`, "operator", "clients\":"} {
						if strings.Contains(body, leak) {
							t.Errorf("%s %s (%s, %.12s) shows %q:\n%s", method, path, accept, auth, leak, body)
						}
					}
				}
			}
		}
	}
}

// With --registry-decides, a registry credential is a scoped caller
// whatever it may read (here everything: the registry has no auth): the
// operator sees downloads, it does not.
func TestCatalogDownloadsReachNoRegistryCredential(t *testing.T) {
	const admin = "operator-token"
	p := startFactsCatalog(t, "", Options{AuthTokens: []string{admin}, RegistryDecides: true})
	downloadHello(t, p, "1.0.0", map[string]string{"Authorization": "Bearer " + admin})
	const page = "/catalog/providers/example.com/test/hello/1.0.0"
	if r := p.do(t, http.MethodGet, page+"?format=json", map[string]string{"Authorization": "Bearer " + admin}); !strings.Contains(string(r.Body), `"downloads_7d":1`) {
		t.Fatalf("the operator's page shows no downloads: %d %s", r.Status, r.Body)
	}
	for _, auth := range []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("alice:alice-Pa55")), "Bearer alice:alice-Pa55"} {
		for _, path := range []string{page, page + "?format=json"} {
			r := p.do(t, http.MethodGet, path, map[string]string{"Authorization": auth})
			if strings.Contains(string(r.Body), "downloads_7d") || strings.Contains(string(r.Body), `id="downloads"`) || strings.Contains(string(r.Body), "operator") {
				t.Errorf("%s (%.10s): %d shows downloads:\n%s", path, auth, r.Status, r.Body)
			}
			if r.Status != http.StatusOK {
				t.Errorf("%s (%.10s): %d, want the page (the registry, without auth, lets anyone read) %.200s", path, auth, r.Status, r.Body)
			}
		}
	}
}
