package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// FuzzServeHTTP sends any method and path to a real server (providers,
// modules and OpenTofu releases in OCI layouts): no request makes it
// panic (its recovery boundary would answer 500) or fail with a 5xx —
// hostile paths are 4xx —, and every error but a HEAD's says why.
func FuzzServeHTTP(f *testing.F) {
	dir, open := layoutStore(f)
	push(f, open("test", "hello"), releaseArtifact(f, "1.0.0"), "1.0.0")
	mdir, mopen := moduleStore(f)
	push(f, mopen("acme", "network", "aws"), moduleArtifact(f, moduleZip(f, "1.0.0")), "1.0.0")
	tref, trepo := tofuLayout(f)
	pushTofuFixture(f, trepo, "1.9.0")
	logs := &testenv.LockedBuffer{}
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{
		Client:           client,
		ProviderMappings: mustMapping(f, "oci-layout:"+dir+"/${namespace}/${type}"),
		ModuleMappings:   []*repotemplate.Template{mustModuleTemplate(f, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")},
		TofuRepository:   &tref,
		Logger:           slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		f.Fatal(err)
	}
	index := strings.Repeat("a", 64)
	for _, p := range []string{
		"/.well-known/terraform.json", "/healthz", "/metrics",
		"/v1/mirror/example.com/test/hello/index.json", "/v1/mirror/example.com/test/hello/1.0.0.json",
		"/v1/mirror/example.com/test/hello/99999999999999999999999.0.0.json",
		"/v1/providers/test/hello/versions", "/v1/providers/test/hello/1.0.0/download/linux/amd64",
		"/v1/archives/example.com/test/hello/1.0.0/" + index + "/terraform-provider-hello_1.0.0_linux_amd64.zip",
		"/v1/modules/acme/network/aws/versions", "/v1/modules/acme/network/aws/1.0.0/download",
		"/v1/module-archives/acme/network/aws/1.0.0/" + index + "/acme-network-aws-1.0.0.zip",
		"/tofu/api.json", "/tofu/download/v1.9.0/tofu_1.9.0_linux_amd64.tar.gz",
		"/v1/mirror/example.com/te%2Fst/hello/index.json", "/v1/providers/../versions", "//x", "/%zz",
	} {
		for _, m := range []string{"GET", "HEAD", "POST", "BREW"} {
			f.Add(m, p)
		}
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		if !validMethod(method) {
			return // net/http refuses the request line before any handler
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Host != "" || u.Scheme != "" {
			return // likewise
		}
		req := &http.Request{Method: method, URL: u, RequestURI: target, Host: "localhost", Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		req = req.WithContext(t.Context())
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 || strings.Contains(logs.String(), "panic") {
			t.Fatalf("%s %s: %d %s\n%s", method, target, rec.Code, rec.Body, logs)
		}
		if rec.Code >= 400 && method != http.MethodHead && !strings.HasPrefix(rec.Body.String(), `{"errors":[`) {
			t.Fatalf("%s %s: %d without an error document: %q", method, target, rec.Code, rec.Body)
		}
	})
}

// validMethod is what net/http accepts as a method (a token).
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, c) {
			return false
		}
	}
	return true
}
