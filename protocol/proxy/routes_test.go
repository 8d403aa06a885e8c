package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// ServeHTTP routes GET and HEAD below a mounted prefix without the mux:
// every request gets the answer the mux would have routed it to (status,
// headers that route or redirect, body), at the prefixes, below them,
// beside them, written with escapes, and for other methods.
func TestMountedPrefixesRouteAsTheMux(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	tref, trepo := tofuLayout(t)
	pushTofuFixture(t, trepo, "1.9.0")
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Client: client, ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")},
		TofuRepository: &tref, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	viaMux := func(w http.ResponseWriter, r *http.Request) {
		if err := respond.CheckRawPath(r.URL); err != nil {
			respond.WriteError(w, r, http.StatusBadRequest, err.Error())
			return
		}
		s.mux.ServeHTTP(w, r)
	}
	paths := []string{
		"/v1/mirror/example.com/test/hello/index.json", "/v1/mirror/example.com/test/hello/1.0.0.json",
		"/v1/mirror/", "/v1/mirror", "/v1/mirrorx/a", "/v1/%6Dirror/example.com/test/hello/index.json",
		"/V1/mirror/example.com/test/hello/index.json", "/v1/mirror/example.com/test/hello/", "/v1/mirror/a%2Fb/c/d/index.json",
		"/v1/providers/test/hello/versions", "/v1/providers/", "/v1/providers",
		"/v1/modules/acme/network/aws/versions", "/v1/modules/", "/v1/module-archives/x",
		"/v1/archives/", "/v1/archives/example.com/test/hello/1.0.0/x/y.zip",
		"/tofu/api.json", "/tofu/api.json/x", "/tofu/download/", "/tofu/download/v1.9.0/nope.zip",
		"/", "/healthz", "/unknown/path", "/.well-known/terraform.json",
	}
	for _, p := range paths {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			req := httptest.NewRequest(m, p, nil)
			want := httptest.NewRecorder()
			viaMux(want, req)
			want = httptest.NewRecorder() // answered again, now warm like the next one
			viaMux(want, httptest.NewRequest(m, p, nil))
			got := httptest.NewRecorder()
			s.ServeHTTP(got, httptest.NewRequest(m, p, nil))
			if got.Code != want.Code || got.Body.String() != want.Body.String() ||
				got.Header().Get("Location") != want.Header().Get("Location") || got.Header().Get("Allow") != want.Header().Get("Allow") {
				t.Errorf("%s %s: %d %q %s, the mux answers %d %q %s", m, p, got.Code, trim(got.Body.String()), got.Header(),
					want.Code, trim(want.Body.String()), want.Header())
			}
		}
	}
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return strings.TrimSpace(s)
}
