package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// mustPolicy is src parsed and put in force, as serve --policy does.
func mustPolicy(t *testing.T, src string) *policy.Live {
	t.Helper()
	p, err := policy.Parse([]byte(src), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewLive(p)
}

// With a policy, a denied version is absent from both listings (the
// versions document says why, naming the rule) and 404 with the reason
// when asked for; platforms a rule leaves out are not offered.
func TestPolicy(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	mappings := mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	pol := mustPolicy(t, `
provider "example.com/test/hello" {
  name      = "hello-v1"
  versions  = ">= 1.0"
  deny      = ["1.1.0"]
  platforms = ["linux_amd64", "darwin_arm64"]
}`)
	p := startProxy(t, Options{ProviderMappings: mappings, Policy: pol, RegistryHostname: "example.com"})
	plain := startProxy(t, Options{ProviderMappings: mappings})

	var idx struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if len(idx.Versions) != 1 || idx.Versions["1.0.0"] == nil {
		t.Errorf("index.json lists %v, want only 1.0.0", idx.Versions)
	}
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Fatalf("versions lists %+v, want only 1.0.0", vd.Versions)
	}
	if got := len(vd.Versions[0].Platforms); got != 2 {
		t.Errorf("1.0.0 lists %d platforms, want the policy's 2: %+v", got, vd.Versions[0].Platforms)
	}
	if !containsWith(vd.Warnings, `1.1.0 is left out: example.com/test/hello 1.1.0 is denied by the policy's rule "hello-v1"`) ||
		!containsWith(vd.Warnings, `2.0.0-rc1 is left out: example.com/test/hello 2.0.0-rc1 does not meet versions = ">= 1.0" of the policy's rule "hello-v1"`) {
		t.Errorf("versions warnings %q do not say why 1.1.0 and 2.0.0-rc1 are left out", vd.Warnings)
	}
	var mv networkMirrorVersion
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	if len(mv.Archives) != 2 || mv.Archives["linux_amd64"].URL == "" || mv.Archives["darwin_arm64"].URL == "" {
		t.Errorf("1.0.0.json: %+v, want linux_amd64 and darwin_arm64 only", mv.Archives)
	}
	var d struct{ Packages map[string]any }
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d)
	if len(d.Packages) != 2 {
		t.Errorf("download packages: %v, want 2", d.Packages)
	}
	p.wantError(t, "/v1/providers/test/hello/1.0.0/download/windows/amd64", 404, `windows_amd64 is not among the platforms of the policy's rule "hello-v1"`)

	const denied = `is denied by the policy's rule "hello-v1"`
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "provider example.com/test/hello 1.1.0 is not served: example.com/test/hello 1.1.0 "+denied)
	p.wantError(t, "/v1/providers/test/hello/1.1.0/download/linux/amd64", 404, denied)
	p.wantError(t, "/v1/mirror/example.com/test/hello/2.0.0-rc1.json", 404, `does not meet versions = ">= 1.0"`)
	// Archive URLs an unpoliced proxy hands out: the denied version's, and
	// an allowed version's platform the policy leaves out.
	var unpoliced networkMirrorVersion
	r := plain.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, &unpoliced)
	u := strings.TrimPrefix(resolve(t, r.URL, unpoliced.Archives["linux_amd64"].URL), plain.URL)
	p.wantError(t, u, 404, denied)
	p.wantError(t, strings.TrimSuffix(u, "linux_amd64.zip")+"SHA256SUMS", 404, denied)
	r = plain.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &unpoliced)
	for pl, a := range unpoliced.Archives {
		want := 200
		if pl != "linux_amd64" && pl != "darwin_arm64" {
			want = 404
		}
		if got := p.get(t, strings.TrimPrefix(resolve(t, r.URL, a.URL), plain.URL)); got.Status != want {
			t.Errorf("1.0.0 %s archive: %d, want %d", pl, got.Status, want)
		}
	}
	// Without the policy, all is served as before.
	plain.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, &unpoliced)
}

// A policy denying every version leaves none, and says why.
func TestPolicyDeniesAll(t *testing.T) {
	dir, open := layoutStore(t)
	pushAttested(t, open("test", "hello"), "1.0.0", nil)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: mustPolicy(t, `default = "deny"`), RegistryHostname: "example.com"})
	p.wantError(t, "/v1/providers/test/hello/versions", 404, "the policy's default is deny")
	var idx struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if len(idx.Versions) != 0 {
		t.Errorf("index.json lists %v", idx.Versions)
	}
}

// A cold versions document reads the allowed versions' indexes only,
// early reads included (the listing starts on the first tag page's
// versions before the list ends): a version the policy denies is never
// read from the registry.
func TestPolicyDeniedVersionsAreNotRead(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "p/test/hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	upstream, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	pol := mustPolicy(t, `
provider "example.com/test/hello" {
  deny = ["1.1.0"]
}`)
	p := startProxy(t, Options{Client: upstream, ProviderMappings: mustMapping(t, front.Host+"/p/${namespace}/${type}"), Policy: pol, RegistryHostname: "example.com"})
	front.ResetLog()
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", http.StatusOK, &vd)
	if len(vd.Versions) != 2 {
		t.Fatalf("versions %+v, want 1.0.0 and 2.0.0-rc1", vd.Versions)
	}
	read := map[string]int{}
	for _, e := range front.Log() {
		read[e.Path]++
	}
	if read["/v2/p/test/hello/manifests/1.1.0"] != 0 || read["/v2/p/test/hello/manifests/1.0.0"] != 1 || read["/v2/p/test/hello/manifests/2.0.0-rc1"] != 1 {
		t.Errorf("registry reads %v: want 1.0.0 and 2.0.0-rc1 read once each, 1.1.0 (denied) never", read)
	}
}

// The version in an archive URL is not a mere label: a client that knows
// a denied version's digest cannot download it under an allowed
// version's URL (providers and modules), while the allowed version's own
// URL still works.
func TestArchiveURLsNameTheVersionsOwnDigest(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	mdir, mopen := moduleStore(t)
	mrepo := mopen("acme", "network", "aws")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		push(t, mrepo, moduleArtifact(t, moduleZip(t, v)), v)
	}
	opts := Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}, RegistryHostname: "example.com"}
	plain := startProxy(t, opts)
	opts.Policy = mustPolicy(t, `
provider "example.com/test/hello" {
  deny = ["1.1.0"]
}
module "example.com/acme/network/aws" {
  deny = ["1.1.0"]
}`)
	p := startProxy(t, opts)

	var denied, allowed networkMirrorVersion
	r := plain.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, &denied)
	deniedURL := strings.TrimPrefix(resolve(t, r.URL, denied.Archives["linux_amd64"].URL), plain.URL)
	r = plain.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &allowed)
	allowedURL := strings.TrimPrefix(resolve(t, r.URL, allowed.Archives["linux_amd64"].URL), plain.URL)
	relabelled := strings.Replace(deniedURL, "/1.1.0/", "/1.0.0/", 1)
	relabelled = strings.Replace(relabelled, "_1.1.0_", "_1.0.0_", 1)
	if relabelled == deniedURL {
		t.Fatalf("could not relabel %s", deniedURL)
	}
	if got := p.get(t, allowedURL); got.Status != 200 {
		t.Fatalf("1.0.0's own archive URL: %d", got.Status)
	}
	p.wantError(t, relabelled, 404, "has no release with index")
	p.wantError(t, strings.TrimSuffix(relabelled, "linux_amd64.zip")+"SHA256SUMS", 404, "has no release with index")

	deniedModule := strings.TrimPrefix(plain.moduleDownload(t, "/v1/modules/acme/network/aws/1.1.0/download", nil), plain.URL)
	allowedModule := strings.TrimPrefix(plain.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil), plain.URL)
	relabelledModule := strings.ReplaceAll(deniedModule, "1.1.0", "1.0.0")
	if got := p.get(t, allowedModule); got.Status != 200 {
		t.Fatalf("module 1.0.0's own archive URL: %d", got.Status)
	}
	p.wantError(t, relabelledModule, 404, "no package with manifest")
}
