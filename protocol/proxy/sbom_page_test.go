package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// sbomFixture is a provider example.com/test/hello in a layout store with
// 1.0.0 built with golang.org/x/text v0.3.7 (GO-2022-1059 in the fixture
// database), 1.1.0 with no dependency and 2.0.0-rc1 without SBOMs.
func sbomFixture(t *testing.T) (dir string, repo oci.Repository) {
	t.Helper()
	dir, open := layoutStore(t)
	repo = open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	xtext := sbom.Module{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="}
	attachSBOMs(t, repo, "1.0.0", "go1.27.5", xtext)
	attachSBOMs(t, repo, "1.1.0", "devel go1.28-0123456") // no stdlib version: nothing found
	return dir, repo
}

// sbomPolicy warns of known vulnerabilities.
const sbomPolicy = `
provider "example.com/test/hello" {
  vulnerabilities { action = "warn" }
}`

func openFixtureDB(t *testing.T) *vulns.Live {
	t.Helper()
	db, err := vulns.OpenLive(vulnFixtureDB, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// platformSections splits an SBOM page into its platforms' sections.
func platformSections(page string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(page, `<section class="platform" id="`)
	for _, p := range parts[1:] {
		id, rest, _ := strings.Cut(p, `"`)
		out[id] = rest
	}
	return out
}

// The SBOM page of a version shows, per platform, what sbom.Read reads
// of its SBOM (Go version, main module, module count) and, with a
// database, the findings; each platform's SPDX document is served as
// stored; a version without SBOMs says so; a version the policy denies,
// or that does not exist, gets the protocols' answer.
func TestSBOMPage(t *testing.T) {
	dir, repo := sbomFixture(t)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), RegistryHostname: "example.com",
		Policy: mustPolicy(t, sbomPolicy), VulnDB: openFixtureDB(t)})
	ctx := context.Background()
	pv, err := oci.ResolveProvider(ctx, repo, names.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.get(t, "/sbom/example.com/test/hello/1.0.0")
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("SBOM page: %d %s: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	sections := platformSections(string(r.Body))
	if len(sections) != len(pv.Platforms) {
		t.Fatalf("SBOM page shows %d platforms, the version has %d:\n%s", len(sections), len(pv.Platforms), r.Body)
	}
	for pl, m := range pv.Platforms {
		st, err := sbom.Read(ctx, repo, m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		sec, exe := sections[pl.String()], st.Doc.Executables[0]
		for _, want := range []string{
			`<td class="go-version">` + exe.Go.GoVersion + `</td>`,
			`<td class="main-module"><code>` + strings.ReplaceAll(exe.Go.Main.Path, "/", "/<wbr>") + "@" + exe.Go.Main.Version + `</code></td>`,
			fmt.Sprintf(`<td class="modules">%d</td>`, len(exe.Go.Modules())),
			"GO-2022-1059", `<td class="fixed">v0.3.8</td>`,
			`href="1.0.0/` + pl.String() + `.spdx.json"`,
		} {
			if !strings.Contains(sec, want) {
				t.Errorf("%s: the SBOM page lacks %q:\n%s", pl, want, sec)
			}
		}

		// The SPDX document: the stored layer's bytes.
		doc := p.get(t, "/sbom/example.com/test/hello/1.0.0/"+pl.String()+".spdx.json")
		if doc.Status != http.StatusOK || doc.Header.Get("Content-Type") != sbom.SPDXMediaType {
			t.Fatalf("%s document: %d %q", pl, doc.Status, doc.Header.Get("Content-Type"))
		}
		if got, want := digest.FromBytes(doc.Body), referrerLayer(t, dir+"/test/hello", st.Referrer.Digest); got != want {
			t.Errorf("%s document: sha256 %s, the stored layer is %s", pl, got, want)
		}
		if sha256.Sum256(doc.Body) != sha256.Sum256(st.SPDX) {
			t.Errorf("%s document differs from what sbom.Read reads", pl)
		}
	}

	clean := string(p.get(t, "/sbom/example.com/test/hello/1.1.0").Body)
	if strings.Contains(clean, "GO-2022-1059") || !strings.Contains(clean, "No known vulnerability found.") {
		t.Errorf("1.1.0's page:\n%s", clean)
	}
	rc, err := oci.ResolveProvider(ctx, repo, names.MustParseVersion("2.0.0-rc1"))
	if err != nil {
		t.Fatal(err)
	}
	none := p.get(t, "/sbom/example.com/test/hello/2.0.0-rc1")
	if none.Status != http.StatusOK || strings.Count(string(none.Body), `<p class="warn missing">no SBOM stored</p>`) != len(rc.Platforms) ||
		!strings.Contains(string(none.Body), "No SBOM is stored: nothing to match.") {
		t.Errorf("2.0.0-rc1: %d, want each of %d platforms to say it has no SBOM:\n%s", none.Status, len(rc.Platforms), none.Body)
	}
	p.wantError(t, "/sbom/example.com/test/hello/2.0.0-rc1/linux_amd64.spdx.json", http.StatusNotFound, "no readable SBOM")

	// Denied and unknown versions: the protocols' status and reason.
	denying := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), RegistryHostname: "example.com",
		Policy: mustPolicy(t, `provider "example.com/test/hello" {
  deny = ["1.1.0"]
}`)})
	for _, v := range []string{"1.1.0", "9.9.9"} {
		mirror := denying.get(t, "/v1/mirror/example.com/test/hello/"+v+".json")
		if mirror.Status == http.StatusOK {
			t.Fatalf("the mirror serves %s", v)
		}
		for _, path := range []string{"/sbom/example.com/test/hello/" + v, "/sbom/example.com/test/hello/" + v + "/linux_amd64.spdx.json"} {
			got := denying.get(t, path)
			if got.Status != mirror.Status || string(got.Body) != string(mirror.Body) {
				t.Errorf("%s: %d %s, the mirror answers %d %s", path, got.Status, got.Body, mirror.Status, mirror.Body)
			}
		}
	}
	if r := denying.get(t, "/sbom/example.com/test/hello/1.0.0"); r.Status != 200 {
		t.Errorf("1.0.0, allowed: %d", r.Status)
	}
	p.wantError(t, "/sbom/example.com/test/hello/1.0.0/plan9_mips.spdx.json", http.StatusNotFound, "has no platform plan9_mips")
}

// referrerLayer is the digest of the one layer of the referrer manifest
// d in the OCI layout at dir.
func referrerLayer(t *testing.T, dir string, d digest.Digest) digest.Digest {
	t.Helper()
	b, err := os.ReadFile(dir + "/blobs/sha256/" + d.Encoded())
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.Layers) != 1 {
		t.Fatalf("referrer %s: %v, %d layers", d, err, len(m.Layers))
	}
	return m.Layers[0].Digest
}

// Paths that cannot name a version's SBOM are refused (400), or not
// found (404), never served or a server error.
func TestSBOMPageHostilePaths(t *testing.T) {
	dir, _ := sbomFixture(t)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), RegistryHostname: "example.com"})
	for _, c := range []struct {
		path string
		want int
	}{
		{"/sbom/example.com/test/hello/../hello/1.0.0", 400},
		{"/sbom/example.com/test/hello/%2e%2e/1.0.0", 400},
		{"/sbom/example.com/test/hello/1.0.0/..%2flinux_amd64.spdx.json", 400},
		{"/sbom/example.com/test/hello/1.0.0/%2e%2e", 400},
		{"/sbom/example.com/test/" + strings.Repeat("h", 2000) + "/1.0.0", 400},
		{"/sbom/example.com/test/hello/not-a-version", 400},
		{"/sbom/example.com/test/hello/1.0.0/linux.spdx.json", 400},
		{"/sbom/example.com/test/hello/1.0.0/linux_amd64.json", 400},
		{"/sbom/example.com/test/hello/1.0.0/linux_amd64_x.spdx.json", 400},
		{"/sbom/example.com/test/hello", 400},
		{"/sbom/example.com/test/hello/1.0.0/linux_amd64.spdx.json/more", 400},
		{"/sbom/example.com//hello/1.0.0", 400},
		{"/sbom/bad_host!/test/hello/1.0.0", 400},
		{"/sbom/example.com/test/hello/1.0.0%00", 400},
		{"/sbom/", 400},
		{"/sbom/example.com/test/nothing/1.0.0", 404},
		{"/sbom/example.com/test/hello/1.0.0/windows_arm.spdx.json", 404},
	} {
		r := p.get(t, c.path)
		if r.Status != c.want {
			t.Errorf("GET %s: %d, want %d: %s", c.path, r.Status, c.want, r.Body)
		}
	}
	if r := p.do(t, http.MethodPost, "/sbom/example.com/test/hello/1.0.0", nil); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", r.Status)
	}
	if r := p.do(t, http.MethodHead, "/sbom/example.com/test/hello/1.0.0", nil); r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Errorf("HEAD: %d, %d bytes", r.Status, len(r.Body))
	}
}

// The page links each provider version it served to its SBOM page; with
// client authentication the minimal page has no such links, and the SBOM
// pages want the clients' tokens.
func TestSBOMPageLinksAndAuth(t *testing.T) {
	dir, _ := sbomFixture(t)
	mappings := mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	open := startProxy(t, Options{ProviderMappings: mappings, RegistryHostname: "example.com"})
	var mv networkMirrorVersion
	open.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	open.getJSON(t, "/v1/providers/test/hello/versions", 200, nil)
	page := string(open.get(t, "/").Body)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if want := `<a class="sbom" href="` + open.URL + `/sbom/example.com/test/hello/` + v + `">SBOM</a>`; !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, grepLines(page, "sbom"))
		}
	}

	const token = "client-token-0123"
	authed := startProxy(t, Options{ProviderMappings: mappings, RegistryHostname: "example.com", AuthTokens: []string{token}})
	bearer := map[string]string{"Authorization": "Bearer " + token}
	if r := authed.do(t, http.MethodGet, "/v1/mirror/example.com/test/hello/1.0.0.json", bearer); r.Status != 200 {
		t.Fatalf("mirror with the token: %d", r.Status)
	}
	for _, path := range []string{"/sbom/example.com/test/hello/1.0.0", "/sbom/example.com/test/hello/1.0.0/linux_amd64.spdx.json", "/sbom/example.com/test/hello/../x"} {
		want := http.StatusUnauthorized
		if strings.Contains(path, "..") {
			want = http.StatusBadRequest // refused before routing, as every path
		}
		if r := authed.get(t, path); r.Status != want {
			t.Errorf("%s without a token: %d, want %d", path, r.Status, want)
		}
		if r := authed.do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer wrong"}); r.Status != want {
			t.Errorf("%s with a wrong token: %d, want %d", path, r.Status, want)
		}
	}
	if r := authed.do(t, http.MethodGet, "/sbom/example.com/test/hello/1.0.0", bearer); r.Status != 200 {
		t.Errorf("SBOM page with the token: %d %s", r.Status, r.Body)
	}
	if page := string(authed.get(t, "/").Body); strings.Contains(page, "/sbom/") {
		t.Errorf("the minimal page links SBOM pages:\n%s", grepLines(page, "sbom"))
	}
}

// A second view of an SBOM page reads nothing from the registry: the
// summaries and findings are cached per platform manifest.
func TestSBOMPageCached(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "providers/test/hello")
	pushAttested(t, repo, "1.0.0", nil)
	attachSBOMs(t, repo, "1.0.0", "go1.27.5", sbom.Module{Path: "golang.org/x/text", Version: "v0.3.7"})
	fp := newFaultProxy(t, reg)
	plain, err := oci.NewClient(oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{Client: plain, ProviderMappings: mustMapping(t, fp.host()+"/providers/${namespace}/${type}"), RegistryHostname: "example.com",
		VulnDB: openFixtureDB(t)})
	first := p.get(t, "/sbom/example.com/test/hello/1.0.0")
	if first.Status != 200 || !strings.Contains(string(first.Body), "GO-2022-1059") {
		t.Fatalf("first view: %d\n%s", first.Status, first.Body)
	}
	before := fp.count("")
	if before == 0 {
		t.Fatal("the first view read nothing through the registry front")
	}
	second := p.get(t, "/sbom/example.com/test/hello/1.0.0")
	if second.Status != 200 || string(second.Body) != string(first.Body) {
		t.Fatalf("second view: %d, differs from the first", second.Status)
	}
	if n := fp.count("") - before; n != 0 {
		t.Errorf("the second view made %d registry requests", n)
	}
}

// vulnerableGauge is the oci_tofu_vulnerable_versions gauge's value.
func vulnerableGauge(t *testing.T, p *proxy) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^oci_tofu_vulnerable_versions (\S+)$`).FindStringSubmatch(string(p.get(t, "/metrics").Body))
	if m == nil {
		return ""
	}
	return m[1]
}

// The gauge counts each version found vulnerable once, whether found by
// policy decisions or SBOM views, however often and however many at
// once; versions without known vulnerabilities are not counted.
func TestVulnerableVersionsGauge(t *testing.T) {
	dir, _ := sbomFixture(t)
	mappings := mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	if none := startProxy(t, Options{ProviderMappings: mappings}); vulnerableGauge(t, none) != "" {
		t.Errorf("the gauge is served without a vulnerability database")
	}
	p := startProxy(t, Options{ProviderMappings: mappings, RegistryHostname: "example.com", Policy: mustPolicy(t, sbomPolicy), VulnDB: openFixtureDB(t)})
	if got := vulnerableGauge(t, p); got != "0" {
		t.Fatalf("at start: %q, want 0", got)
	}
	paths := []string{
		"/sbom/example.com/test/hello/1.0.0", "/sbom/example.com/test/hello/1.1.0", "/sbom/example.com/test/hello/2.0.0-rc1",
		"/v1/providers/test/hello/versions", "/v1/providers/test/hello/1.0.0/download/linux/amd64",
		"/v1/mirror/example.com/test/hello/1.0.0.json", "/v1/mirror/example.com/test/hello/1.1.0.json",
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range len(paths) {
				path := paths[(i+j)%len(paths)]
				if r := p.get(t, path); r.Status != 200 {
					t.Errorf("%s: %d %s", path, r.Status, r.Body)
				}
			}
		})
	}
	wg.Wait()
	// 1.0.0 through the registry protocol (example.com, the proxy's host
	// name) and the mirror (example.com too): one address, one version.
	if got := vulnerableGauge(t, p); got != "1" {
		t.Errorf("after views and decisions: %q, want 1", got)
	}
	time.Sleep(10 * time.Millisecond)
	p.get(t, "/sbom/example.com/test/hello/1.0.0")
	if got := vulnerableGauge(t, p); got != "1" {
		t.Errorf("after another view: %q, want 1", got)
	}
}
