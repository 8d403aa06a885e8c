package proxy

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// moduleZip is a module package: main.tf saying which version it is.
func moduleZip(t testing.TB, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("main.tf")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "output \"version\" { value = %q }\n", version)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// moduleArtifact is what `oci-tofu push module` pushes for a zip.
func moduleArtifact(t testing.TB, z []byte) *oci.Artifact {
	t.Helper()
	return seed.ModuleArtifact(t, z)
}

func mustModuleTemplate(t testing.TB, s string) *repotemplate.Template {
	t.Helper()
	tpl, err := repotemplate.ParseModuleTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// moduleStore is a directory of OCI layouts, one per module, as
// oci-layout:DIR/${namespace}/${name}/${system} names them.
func moduleStore(t testing.TB) (dir string, open func(ns, name, system string) oci.Repository) {
	t.Helper()
	dir = t.TempDir()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, func(ns, name, system string) oci.Repository {
		repo, err := client.Open(oci.Reference{Layout: true, Repository: filepath.Join(dir, ns, name, system)})
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
}

type moduleVersionsDoc struct {
	Modules []struct {
		Versions []struct{ Version string }
	}
}

func (d moduleVersionsDoc) list() []string {
	var out []string
	for _, m := range d.Modules {
		for _, v := range m.Versions {
			out = append(out, v.Version)
		}
	}
	return out
}

// moduleDownload asks for a version's download location and returns the
// archive URL it resolves to.
func (p *proxy) moduleDownload(t testing.TB, path string, header map[string]string) string {
	t.Helper()
	r := p.do(t, http.MethodGet, path, header)
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("GET %s: %d %s, want 204 without a body", path, r.Status, r.Body)
	}
	loc := r.Header.Get("X-Terraform-Get")
	if !strings.HasPrefix(loc, p.URL+"/") {
		t.Fatalf("X-Terraform-Get %q is not an absolute URL on the host the client used (%s)", loc, p.URL)
	}
	u := resolve(t, r.URL, loc)
	pu, _ := url.Parse(u)
	if !strings.HasPrefix(pu.Path, ModuleArchivePrefix) || !strings.HasSuffix(pu.Path, ".zip") {
		t.Fatalf("archive URL %s: not below %s or not ending in .zip (go-getter would not unpack it)", u, ModuleArchivePrefix)
	}
	return u
}

// Module packages as `oci-tofu push module` writes them, served through
// the Module Registry Protocol from OCI layouts: discovery, versions from
// canonical semver tags only, download locations that go-getter unpacks,
// archives pinned to the manifest digest.
func TestModulesServeFromLayout(t *testing.T) {
	dir, open := moduleStore(t)
	repo := open("acme", "network", "aws")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1", "1.0.0+build.5"} {
		push(t, repo, moduleArtifact(t, moduleZip(t, v)), names.TagForVersion(mustVersion(t, v)))
	}
	push(t, repo, moduleArtifact(t, moduleZip(t, "latest")), "latest")
	push(t, repo, moduleArtifact(t, moduleZip(t, "v3")), "v3.0.0")
	// A provider (an image index) under a version tag is not a module.
	push(t, repo, releaseArtifact(t, "1.0.0"), "3.0.0")

	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")}})

	var disco map[string]string
	p.getJSON(t, "/.well-known/terraform.json", 200, &disco)
	if disco["modules.v1"] != "/v1/modules/" || disco["providers.v1"] != "" {
		t.Fatalf("discovery with modules only: %v", disco)
	}
	// No providers configured: their handlers are not there.
	if r := p.get(t, "/v1/providers/acme/network/versions"); r.Status != http.StatusNotFound {
		t.Errorf("providers.v1 without a provider template: %d", r.Status)
	}

	var vs moduleVersionsDoc
	p.getJSON(t, "/v1/modules/acme/network/aws/versions", 200, &vs)
	got := vs.list()
	slices.Sort(got)
	if len(vs.Modules) != 1 || !slices.Equal(got, []string{"1.0.0", "1.0.0+build.5", "1.1.0", "2.0.0-rc1"}) {
		t.Fatalf("versions %+v: want the canonical semver tags holding module packages", vs)
	}
	if !strings.Contains(p.logs.String(), "not a module package") {
		t.Errorf("the provider under 3.0.0 was not logged as left out")
	}
	// Addresses are case-insensitive.
	p.getJSON(t, "/v1/modules/ACME/Network/AWS/versions", 200, nil)

	for _, v := range []string{"1.1.0", "1.0.0+build.5"} {
		u := p.moduleDownload(t, "/v1/modules/acme/network/aws/"+url.PathEscape(v)+"/download", nil)
		r := p.get(t, u)
		if r.Err != nil || r.Status != 200 || !bytes.Equal(r.Body, moduleZip(t, v)) {
			t.Fatalf("archive %s: %d %v, %d bytes", u, r.Status, r.Err, len(r.Body))
		}
		if r.Header.Get("Content-Type") != "application/zip" || r.Header.Get("ETag") != `"`+digest.FromBytes(moduleZip(t, v)).String()+`"` {
			t.Errorf("archive headers %v", r.Header)
		}
		h := p.do(t, http.MethodHead, u, nil)
		if h.Status != 200 || len(h.Body) != 0 || h.Header.Get("Content-Length") != fmt.Sprint(len(moduleZip(t, v))) {
			t.Errorf("HEAD %s: %d, %d bytes, %v", u, h.Status, len(h.Body), h.Header)
		}
	}

	// The archive URL names the manifest digest: re-tagging the version
	// does not change what an already handed-out URL serves, and the next
	// download answer names the new content.
	old := p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)
	push(t, repo, moduleArtifact(t, moduleZip(t, "1.0.0 again")), "1.0.0")
	if r := p.get(t, old); r.Status != 200 || !bytes.Equal(r.Body, moduleZip(t, "1.0.0")) {
		t.Fatalf("old URL after re-tag: %d", r.Status)
	}
	p2 := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")}})
	fresh := p2.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)
	if r := p2.get(t, fresh); r.Status != 200 || !bytes.Equal(r.Body, moduleZip(t, "1.0.0 again")) {
		t.Fatalf("new URL after re-tag: %d", r.Status)
	}
	if path.Dir(mustURL(t, fresh).Path) == path.Dir(mustURL(t, old).Path) {
		t.Fatalf("same archive URL for different content")
	}
	// A digest-pinned URL with another module's path is not served.
	forged := strings.Replace(old, "/network/", "/other/", 1)
	forged = strings.Replace(forged, "acme-network-aws", "acme-other-aws", 1)
	p.wantError(t, forged, http.StatusNotFound, "unknown module")
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustVersion(t testing.TB, s string) names.Version {
	t.Helper()
	v, err := names.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The ${hostname} placeholder is the proxy's registry hostname.
func TestModulesHostnameTemplate(t *testing.T) {
	dir, _ := moduleStore(t)
	client, _ := oci.NewClient(oci.Options{})
	repo, err := client.Open(oci.Reference{Layout: true, Repository: filepath.Join(dir, "modules.example.com", "acme", "net", "aws")})
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	tpl := mustModuleTemplate(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${name}/${system}")
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}, RegistryHostname: "modules.example.com"})
	u := p.moduleDownload(t, "/v1/modules/acme/net/aws/1.0.0/download", nil)
	if r := p.get(t, u); r.Status != 200 || !bytes.Equal(r.Body, moduleZip(t, "1.0.0")) {
		t.Fatalf("archive: %d", r.Status)
	}
	// Without --registry-hostname the host clients use (127.0.0.1 here)
	// is the ${hostname}: another repository, which does not exist.
	q := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}})
	q.wantError(t, "/v1/modules/acme/net/aws/versions", http.StatusNotFound, "unknown module acme/net/aws")
}

func TestModulesNotFound(t *testing.T) {
	dir, open := moduleStore(t)
	repo := open("acme", "network", "aws")
	push(t, repo, moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	push(t, repo, releaseArtifact(t, "1.0.0"), "3.0.0")
	onlyProvider := open("acme", "provider", "aws")
	push(t, onlyProvider, releaseArtifact(t, "1.0.0"), "1.0.0")
	noVersions := open("acme", "empty", "aws")
	push(t, noVersions, moduleArtifact(t, moduleZip(t, "x")), "latest")
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")}})
	hex := strings.Repeat("a", 64)
	for _, c := range []struct{ path, msg string }{
		{"/v1/modules/acme/nope/aws/versions", "unknown module acme/nope/aws"},
		{"/v1/modules/nope/network/aws/versions", "unknown module"},
		{"/v1/modules/acme/network/gcp/1.0.0/download", "unknown module"},
		{"/v1/modules/acme/network/aws/9.9.9/download", "no version 9.9.9"},
		{"/v1/modules/acme/empty/aws/versions", "has no versions"},
		{"/v1/modules/acme/provider/aws/versions", "no versions holding a module package"},
		{"/v1/module-archives/acme/network/aws/1.0.0/" + hex + "/acme-network-aws-1.0.0.zip", "no package with manifest"},
		{"/v1/module-archives/acme/nope/aws/1.0.0/" + hex + "/acme-nope-aws-1.0.0.zip", "unknown module"},
	} {
		p.wantError(t, c.path, http.StatusNotFound, c.msg)
	}
	// A version tag holding something else is the registry's fault: 502,
	// never 404 and never a download location.
	p.wantError(t, "/v1/modules/acme/network/aws/3.0.0/download", http.StatusBadGateway, "artifact OpenTofu would refuse")
	for _, path := range []string{"/v1/mirror/example.com/acme/network/index.json", "/tofu/api.json", "/v1/archives/x"} {
		if r := p.get(t, path); r.Status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, r.Status)
		}
	}
}

// Malformed paths are refused with 400 before anything is looked up.
func TestModulesBadPaths(t *testing.T) {
	dir, open := moduleStore(t)
	push(t, open("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")}})
	hex := strings.Repeat("a", 64)
	archive := "/v1/module-archives/acme/network/aws/1.0.0/"
	for _, path := range []string{
		"/v1/modules/acme/network/versions",
		"/v1/modules/acme/network/aws/version",
		"/v1/modules/acme/network/aws/versions/extra/x",
		"/v1/modules/acme/network/aws/1.0.0/downloads",
		"/v1/modules/acme/network/aws/v1.0.0/download",
		"/v1/modules/acme/network/aws/1.0/download",
		"/v1/modules/acme/network/aws/latest/download",
		"/v1/modules/acme/../aws/versions",
		"/v1/modules/acme/%2e%2e/aws/versions",
		"/v1/modules/acme/net%2Fwork/aws/versions",
		"/v1/modules/acme/net%5Cwork/aws/versions",
		"/v1/modules/acme//aws/versions",
		"/v1/modules/ac%00me/network/aws/versions",
		"/v1/modules/-acme/network/aws/versions",
		"/v1/modules/acme/network_/aws/versions",
		"/v1/modules/acme/net--work/aws/versions",
		"/v1/modules/acme/network/aws-west/versions",
		"/v1/modules/acme/net.work/aws/versions",
		"/v1/modules/acme/" + strings.Repeat("n", 65) + "/aws/versions",
		"/v1/modules/acme/network/" + strings.Repeat("s", 65) + "/versions",
		"/v1/modules/" + strings.Repeat("a", 2000) + "/network/aws/versions",
		archive + hex + "/acme-network-aws-1.0.1.zip",
		archive + hex + "/acme-network-gcp-1.0.0.zip",
		archive + hex + "/module.zip",
		archive + hex[:63] + "/acme-network-aws-1.0.0.zip",
		archive + strings.ToUpper(hex) + "/acme-network-aws-1.0.0.zip",
		archive + hex + "/..%2F..%2Fetc%2Fpasswd",
		archive + hex,
	} {
		r := p.get(t, path)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"errors"`) {
			t.Errorf("%s: status %d %s, want 400", path, r.Status, r.Body)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if r := p.do(t, m, "/v1/modules/acme/network/aws/versions", nil); r.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, r.Status)
		}
	}
}

// Registry failures are 5xx with a clear message, never 404.
func TestModulesUpstreamFailures(t *testing.T) {
	reg := testenv.StartRegistry(t)
	push(t, registryRepo(t, reg, "modules/acme/network/aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	fp := newFaultProxy(t, reg)
	opts := throughFaults()
	opts.ModuleMappings = []*repotemplate.Template{mustModuleTemplate(t, fp.host()+"/modules/${namespace}/${name}/${system}")}
	p := startProxy(t, opts)
	versionsPath := "/v1/modules/acme/network/aws/versions"
	download := "/v1/modules/acme/network/aws/1.0.0/download"
	var vs moduleVersionsDoc
	p.getJSON(t, versionsPath, 200, &vs)
	if !slices.Equal(vs.list(), []string{"1.0.0"}) {
		t.Fatalf("%+v", vs)
	}
	u := p.moduleDownload(t, download, nil)
	for _, c := range upstreamFaults {
		fp.mode.Store(c.mode)
		for _, path := range []string{versionsPath, download} {
			p.wantError(t, path, c.status, c.msg)
		}
	}
	fp.mode.Store("corrupt-blob")
	if r := p.get(t, u); r.Err == nil || len(r.Body) >= len(moduleZip(t, "1.0.0")) {
		t.Fatalf("a blob corrupted by the registry was delivered: %d, %d bytes", r.Status, len(r.Body))
	}
	fp.mode.Store("")
	if r := p.get(t, u); r.Err != nil || !bytes.Equal(r.Body, moduleZip(t, "1.0.0")) {
		t.Fatalf("after recovery: %v", r.Err)
	}

	down := startProxy(t, Options{Client: opts.Client, ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "127.0.0.1:1/modules/${namespace}/${name}/${system}")}})
	down.wantError(t, versionsPath, http.StatusBadGateway, "unreachable")
	down.wantError(t, download, http.StatusBadGateway, "unreachable")
}

// A zip whose bytes do not match the layer digest is never delivered
// whole.
func TestModulesDigestMismatchAbortsStream(t *testing.T) {
	dir, open := moduleStore(t)
	z := moduleZip(t, "1.0.0")
	push(t, open("acme", "network", "aws"), moduleArtifact(t, z), "1.0.0")
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")}})
	u := p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)
	blob := filepath.Join(dir, "acme", "network", "aws", "blobs", "sha256", sha256Hex(z))
	bad := slices.Clone(z)
	bad[len(bad)-1] ^= 1
	if err := os.WriteFile(blob, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.get(t, u); got.Err == nil || len(got.Body) >= len(z) {
		t.Fatalf("corrupt module zip delivered: %d, %d bytes", got.Status, len(got.Body))
	}
	if n, err := downloadHTTP1(t, p, u); err == nil || n >= len(z) {
		t.Fatalf("HTTP/1.1: corrupt module zip delivered: %d bytes", n)
	}
	if !strings.Contains(p.logs.String(), "digest_mismatch") {
		t.Errorf("abort not logged")
	}
}

// With client authentication, modules.v1 needs a bearer token, and the
// archive URLs (fetched without credentials) are signed and expire.
func TestModulesClientAuthentication(t *testing.T) {
	dir, open := moduleStore(t)
	z := moduleZip(t, "1.0.0")
	push(t, open("acme", "network", "aws"), moduleArtifact(t, z), "1.0.0")
	token := "s3cret-token-0123456789"
	p := startProxy(t, Options{
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")},
		AuthTokens:     []string{token},
		ArchiveURLTTL:  time.Minute,
	})
	for _, path := range []string{"/v1/modules/acme/network/aws/versions", "/v1/modules/acme/network/aws/1.0.0/download"} {
		if r := p.get(t, path); r.Status != http.StatusUnauthorized {
			t.Fatalf("%s without token: %d", path, r.Status)
		}
		if r := p.do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer wrong-token-0123456789"}); r.Status != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong token: %d", path, r.Status)
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + token}
	if r := p.do(t, http.MethodGet, "/v1/modules/acme/network/aws/versions", auth); r.Status != 200 {
		t.Fatalf("versions with token: %d %s", r.Status, r.Body)
	}
	u := p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", auth)
	if r := p.get(t, u); r.Status != 200 || !bytes.Equal(r.Body, z) {
		t.Fatalf("signed archive URL: %d", r.Status)
	}
	pu, _ := url.Parse(u)
	unsigned := *pu
	unsigned.RawQuery = ""
	p.wantError(t, unsigned.String(), http.StatusForbidden, "not signed")
	// A signature for one path does not open another.
	other := *pu
	other.Path = strings.Replace(pu.Path, "/aws/", "/gcp/", 1)
	other.Path = strings.Replace(other.Path, "-aws-", "-gcp-", 1)
	p.wantError(t, other.String(), http.StatusForbidden, "signature is invalid")
	p.out.URLs.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	p.wantError(t, u, http.StatusForbidden, "expired")
	if strings.Contains(p.logs.String(), token) || strings.Contains(p.logs.String(), "signature=") {
		t.Errorf("secrets in the log:\n%s", p.logs.String())
	}
}

func TestNewNeedsSomethingToServe(t *testing.T) {
	c, _ := oci.NewClient(oci.Options{})
	if _, err := New(Options{Client: c}); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Fatalf("New without templates: %v", err)
	}
	ref, _ := oci.ParseReference("localhost:5000/opentofu:1.9.0")
	if _, err := New(Options{Client: c, TofuRepository: &ref}); err == nil {
		t.Fatal("a tofu repository with a tag was accepted")
	}
}

// OpenTofu 1.12 and later get the download answer as a direct location,
// unsigned, fetched with their credentials for this host
// (use_registry_credentials); Terraform and older tofu keep the signed
// X-Terraform-Get URL. An unsigned archive URL is served with a valid
// token and refused without one or with a wrong one.
func TestModuleDownloadsForClientsWithCredentials(t *testing.T) {
	dir, open := moduleStore(t)
	z := moduleZip(t, "1.0.0")
	push(t, open("acme", "network", "aws"), moduleArtifact(t, z), "1.0.0")
	token := "s3cret-token-0123456789"
	p := startProxy(t, Options{
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")},
		AuthTokens:     []string{token},
	})
	download := "/v1/modules/acme/network/aws/1.0.0/download"
	for ua, direct := range map[string]bool{
		"OpenTofu/1.12.6": true, "OpenTofu/1.13.0-beta1 ci-bot/2": true, "OpenTofu/2.0.0": true,
		"OpenTofu/1.11.5": false, "Terraform/1.11.4": false, "": false, "OpenTofu/garbage": false,
	} {
		r := p.do(t, http.MethodGet, download, map[string]string{"Authorization": "Bearer " + token, "User-Agent": ua})
		if !direct {
			if r.Status != http.StatusNoContent || !strings.Contains(r.Header.Get("X-Terraform-Get"), "signature=") {
				t.Errorf("%q: %d, X-Terraform-Get %q; want 204 with a signed URL", ua, r.Status, r.Header.Get("X-Terraform-Get"))
			}
			continue
		}
		var loc struct {
			Location               string `json:"location"`
			UseRegistryCredentials *bool  `json:"use_registry_credentials"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &loc) != nil || loc.UseRegistryCredentials == nil || !*loc.UseRegistryCredentials ||
			strings.Contains(loc.Location, "?") || !strings.Contains(loc.Location, ModuleArchivePrefix) {
			t.Fatalf("%q: %d %s; want 200 with an unsigned direct location and use_registry_credentials true", ua, r.Status, r.Body)
		}
		if got := p.do(t, http.MethodGet, loc.Location, map[string]string{"Authorization": "Bearer " + token}); got.Status != 200 || !bytes.Equal(got.Body, z) {
			t.Errorf("%q: the direct location with the token: %d", ua, got.Status)
		}
		p.wantError(t, loc.Location, http.StatusForbidden, "not signed")
		if got := p.do(t, http.MethodGet, loc.Location, map[string]string{"Authorization": "Bearer wrong-token-0123456789"}); got.Status != http.StatusForbidden {
			t.Errorf("%q: the direct location with a wrong token: %d", ua, got.Status)
		}
	}
}
