package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/keyless"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/sigstoretest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

const (
	factsIssuer   = "https://token.actions.githubusercontent.com"
	factsWorkflow = "https://github.com/acme/hello/.github/workflows/release.yml@refs/heads/main"
)

// pushKeylessAttested pushes version to repo and attests its index
// keylessly, as cosign attest does without a key: a Sigstore bundle
// signed by identity of factsIssuer, in a referrer of the index.
func pushKeylessAttested(t *testing.T, repo oci.Repository, sig sigstoretest.Sigstore, version, identity string) {
	t.Helper()
	a := releaseArtifact(t, version)
	push(t, repo, a, version)
	root := a.Root()
	statement, err := json.Marshal(attest.Statement{Type: attest.StatementType, PredicateType: pubrelease.ProviderPredicateType,
		Subject:   []attest.Subject{{Name: "example.com/test/hello", Digest: map[string]string{"sha256": root.Digest.Encoded()}}},
		Predicate: json.RawMessage(`{"version":"` + version + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	bundle := sig.Attest(t, factsIssuer, identity, statement, sigstoretest.Opts{})
	layer := oci.BytesBlob(attach.ArtifactTypeSigstoreBundle, bundle, nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: attach.ArtifactTypeSigstoreBundle, Config: cfg.Descriptor, Layers: []ocispec.Descriptor{layer.Descriptor}, Subject: &root,
		Annotations: map[string]string{attest.AnnotationBundlePredicateType: pubrelease.ProviderPredicateType}}) // as cosign v3 writes it
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(context.Background(), repo, &oci.Artifact{Blobs: []oci.Blob{layer, cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// catalogFactsPolicy warns of known vulnerabilities and revokes 2.0.0.
const catalogFactsPolicy = `
provider "example.com/test/hello" {
  name = "hello"
  vulnerabilities { action = "warn" }
  revoked {
    versions = "2.0.0-rc1"
    message  = "leaks the token"
  }
}
`

// startFactsCatalog serves example.com/test/hello from Distribution,
// every version attested keylessly by factsWorkflow: 1.0.0 built with
// golang.org/x/text v0.3.7 (GO-2022-1059 in the fixture database),
// 1.1.0 without SBOMs, 2.0.0-rc1 revoked; serve
// requires that keyless identity and matches the fixture database.
func startFactsCatalog(t *testing.T, extraPolicy string, opts Options) *proxy {
	t.Helper()
	_, p := startFactsRegistry(t, extraPolicy, opts)
	return p
}

// startFactsRegistry is startFactsCatalog, with its registry.
func startFactsRegistry(t *testing.T, extraPolicy string, opts Options) (*testenv.Registry, *proxy) {
	t.Helper()
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "p/test/hello")
	sig := sigstoretest.New(t)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushKeylessAttested(t, repo, sig, v, factsWorkflow)
	}
	xtext := sbom.Module{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="}
	attachSBOMs(t, repo, "1.0.0", "go1.27.5", xtext)
	v, err := keyless.LoadVerifier(sig.Root, []keyless.Identity{{Issuer: factsIssuer, Subject: factsWorkflow}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	opts.Client = client
	opts.ProviderMappings = mustMapping(t, reg.Host+"/p/${namespace}/${type}")
	opts.RegistryHostname = "example.com"
	opts.RequireKeyless = v
	opts.VulnDB = openFixtureDB(t)
	opts.Policy = mustPolicy(t, catalogFactsPolicy+extraPolicy)
	return reg, startProxy(t, opts)
}

// downloadHello downloads the linux_amd64 package of version through
// the mirror protocol, as a client with header would.
func downloadHello(t *testing.T, p *proxy, version string, header map[string]string) {
	t.Helper()
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	r := p.do(t, http.MethodGet, "/v1/mirror/example.com/test/hello/"+version+".json", header)
	if err := json.Unmarshal(r.Body, &doc); err != nil || r.Status != http.StatusOK {
		t.Fatalf("document: %d %s", r.Status, r.Body)
	}
	if got := p.do(t, http.MethodGet, resolve(t, r.URL, doc.Archives["linux_amd64"].URL), header); got.Status != http.StatusOK {
		t.Fatalf("archive: %d %s", got.Status, got.Body)
	}
}

// A provider version's page says who signed it (the keyless identity
// --require-keyless's verifier accepts) and the attestation rule's
// word, its SBOMs in short and the database's findings, the policy's
// verdict with the rule (warned of vulnerabilities, revoked), and its
// downloads, in the JSON and on the page.
func TestCatalogProviderFacts(t *testing.T) {
	p := startFactsCatalog(t, "", Options{})
	downloadHello(t, p, "1.0.0", nil)
	downloadHello(t, p, "1.1.0", nil)

	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("page: %d %s", r.Status, r.Body)
	}
	const found = "GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8"
	if s := d.Status; s.Status != catalog.StatusWarned || s.Rule != "hello" || !strings.Contains(s.Message, found) || !strings.Contains(s.Reason, `allowed by the policy's rule "hello"`) {
		t.Errorf("status: %+v", s)
	}
	if len(d.Signer.KeyIDs) == 0 || !slices.Equal(d.Signer.KeyIDs, d.SigningKeyIDs) {
		t.Errorf("publisher keys: %v, signing_key_ids %v", d.Signer.KeyIDs, d.SigningKeyIDs)
	}
	if k := d.Signer.Keyless; !d.Signer.KeylessChecked || k == nil || k.Issuer != factsIssuer || k.Identity != factsWorkflow {
		t.Errorf("keyless signer: %+v (checked %v)", k, d.Signer.KeylessChecked)
	}
	if a := d.Attestation; a == nil || !a.Admitted || a.PredicateType != pubrelease.ProviderPredicateType {
		t.Errorf("attestation: %+v", a)
	}
	if len(d.SBOMs.Platforms) != len(d.Platforms) || d.SBOMs.Database == "" {
		t.Fatalf("SBOMs: %+v", d.SBOMs)
	}
	for _, pl := range d.SBOMs.Platforms {
		if !pl.Stored || pl.GoVersion != "go1.27.5" || pl.Modules != 2 || pl.MainModule != "example.com/terraform-provider-hello@(devel)" {
			t.Errorf("SBOM of %s: %+v", pl.Platform, pl)
		}
	}
	vs := d.SBOMs.Vulnerabilities
	i := slices.IndexFunc(vs, func(v catalog.Vulnerability) bool { return v.ID == "GO-2022-1059" })
	if i < 0 || vs[i].Fixed != "v0.3.8" || vs[i].Module != "golang.org/x/text" || vs[i].Version != "v0.3.7" ||
		!slices.Contains(vs[i].Aliases, "CVE-2022-32149") || !slices.Equal(vs[i].Platforms, d.Platforms) {
		t.Errorf("vulnerabilities: %+v", vs)
	}
	for _, v := range vs { // each finding the policy's warning names, and only those
		if !strings.Contains(d.Status.Message, v.ID) {
			t.Errorf("%s is found, the policy's warning does not name it: %s", v.ID, d.Status.Message)
		}
	}
	if u := d.Downloads; u == nil || u.Week != 2 || u.Month != 2 || u.Clients != 1 || u.From != "this replica's audit trail" {
		t.Errorf("downloads: %+v", u)
	} else if v := u.Version; v == nil || *v != (catalog.VersionCounts{Version: "1.0.0", Week: 1, Month: 1, Clients: 1}) {
		t.Errorf("1.0.0's downloads: %+v", v)
	}
	var statuses []string
	for _, v := range d.Versions {
		msg, _, _ := strings.Cut(v.Message, ";")
		statuses = append(statuses, v.Version+" "+v.Status+" "+v.Rule+" "+msg)
	}
	if want := []string{"2.0.0-rc1 revoked hello leaks the token", "1.1.0 served hello ", "1.0.0 warned hello known vulnerabilities: " + found}; !slices.Equal(statuses, want) {
		t.Errorf("versions:\n%s\nwant\n%s", strings.Join(statuses, "\n"), strings.Join(want, "\n"))
	}

	html := p.get(t, "/catalog/providers/example.com/test/hello/1.0.0")
	for _, want := range []string{
		`<code>https:/<wbr>/<wbr>github.com/<wbr>acme/<wbr>hello/`, `issued by`, `<span class="ok">verified</span>`,
		`<li class="vuln"><span class="bad">GO-2022-1059</span> CVE-2022-32149`, `fixed in <code>v0.3.8</code>`,
		`<span id="downloads-7d">2</span>`, `<span id="downloads-30d">2</span>`, `<span id="clients">1</span>`, `Version 1.0.0: <span id="version-downloads-7d">1</span>`,
		`<span class="warn">warned</span> by rule <code>hello</code>`, `revoked</span> <span class="muted">rule hello</span>`,
	} {
		if !strings.Contains(string(html.Body), want) {
			t.Errorf("the page lacks %q:\n%s", want, html.Body)
		}
	}

	none, _ := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.1.0", nil)
	for _, pl := range none.SBOMs.Platforms {
		if pl.Stored || pl.Missing != "no SBOM stored" {
			t.Errorf("1.1.0's SBOM of %s: %+v", pl.Platform, pl)
		}
	}
	if u := none.Downloads; u == nil || u.Week != 2 || u.Version == nil || *u.Version != (catalog.VersionCounts{Version: "1.1.0", Week: 1, Month: 1, Clients: 1}) {
		t.Errorf("1.1.0's downloads (the address's 2, its own 1): %+v", u)
	}
	if html := string(p.get(t, "/catalog/providers/example.com/test/hello/1.1.0").Body); !strings.Contains(html, `<span class="warn missing">no SBOM stored</span>`) {
		t.Errorf("1.1.0's page does not say it has no SBOM:\n%s", html)
	}
}

// Without a keyless verifier, an attestation rule or a vulnerability
// database, the page says each was not checked, plainly.
func TestCatalogProviderFactsNotChecked(t *testing.T) {
	p, _ := startProviderCatalog(t, "", Options{})
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-a/hello/1.0.0", nil)
	if r.Status != http.StatusOK || d.Signer.KeylessChecked || d.Signer.Keyless != nil || d.Attestation != nil || d.SBOMs.Database != "" || len(d.SBOMs.Vulnerabilities) != 0 {
		t.Errorf("page: %d %+v", r.Status, d)
	}
	if d.Status.Status != catalog.StatusServed || d.Status.Rule != "example.com/team-a/hello" {
		t.Errorf("status: %+v", d.Status)
	}
	html := string(p.get(t, "/catalog/providers/example.com/team-a/hello/1.0.0").Body)
	for _, want := range []string{"No vulnerability database configured", "not checked: serve has no attestation rule", "not checked: serve has no keyless verifier", "no SBOM stored"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q:\n%s", want, html)
		}
	}
}

// Downloads are shown only to a caller reading everything: a scoped
// client's page has none, in the JSON or on the page, even for the
// address it downloaded itself.
func TestCatalogProviderDownloadsAreScoped(t *testing.T) {
	const tokenA, admin = "token-of-a", "operator-token"
	p := startFactsCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
}
`, policy.TokenHash(tokenA)), Options{AuthTokens: []string{admin}})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	downloadHello(t, p, "1.0.0", as(tokenA))
	downloadHello(t, p, "1.0.0", as(admin))

	if d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0", as(admin)); r.Status != http.StatusOK || d.Downloads == nil || d.Downloads.Week != 2 || d.Downloads.Clients != 2 {
		t.Errorf("operator's page: %d %+v", r.Status, d.Downloads)
	}
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0", as(tokenA))
	if r.Status != http.StatusOK || d.Downloads != nil || !strings.Contains(string(r.Body), `"downloads":null`) {
		t.Errorf("a's page: %d %s", r.Status, r.Body)
	}
	html := p.do(t, http.MethodGet, "/catalog/providers/example.com/test/hello/1.0.0", as(tokenA))
	if html.Status != http.StatusOK || strings.Contains(string(html.Body), `id="downloads"`) || strings.Contains(string(html.Body), "operator") {
		t.Errorf("a's page shows downloads: %d\n%s", html.Status, html.Body)
	}
}

// With the fleet sharing a Redis, the downloads shown are the fleet's
// counts, which every replica adds to (countsFlushEvery).
func TestCatalogProviderDownloadsOfTheFleet(t *testing.T) {
	srv := testenv.StartRedis(t)
	shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), BreakerOpen: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	p := startFactsCatalog(t, "", Options{Shared: shared})
	downloadHello(t, p, "1.0.0", nil)
	var u *catalog.UsageCounts
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("page: %d %s", r.Status, r.Body)
		}
		if u = d.Downloads; u != nil && u.Week > 0 || time.Now().After(deadline) {
			break
		}
	}
	if u == nil || u.From != "the fleet's shared counts" || u.Week != 1 || u.Month != 1 || u.Clients != 1 {
		t.Errorf("downloads: %+v", u)
	} else if v := u.Version; v == nil || *v != (catalog.VersionCounts{Version: "1.0.0", Week: 1, Month: 1, Clients: 1}) {
		t.Errorf("1.0.0's downloads: %+v", v)
	}
}

// The server asks --require-keyless's verifier who signed through an
// interface (catalog_facts.go): it never imports convert/keyless, so a
// build with the nokeyless tag leaves sigstore-go out.
func TestProxyLeavesSigstoreToTheCommand(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/oci-tofu/oci-tofu/protocol/proxy").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "sigstore/sigstore-go") || dep == "github.com/oci-tofu/oci-tofu/convert/keyless" {
			t.Errorf("protocol/proxy depends on %s", dep)
		}
	}
}

// The signers a policy rule requires are shown with the gate's verdict
// on each, for the version shown; a version they refuse is denied in the
// list, with the rule and the reason.
func TestCatalogProviderRequiredSigners(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	ours := attesttest.Signer(t)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, time.Now())
	pushAttested(t, repo, "1.1.0", nil)
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	publisher := pgp.KeyID(kr.Entities[0].PrimaryKey.KeyId)
	pol := factsPolicy(t, `
provider "example.com/test/hello" {
  name    = "publisher-and-org"
  signers = ["publisher:`+publisher+`", "attestation:org.pub"]
}`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), RegistryHostname: "example.com", Policy: pol})
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello", nil)
	if r.Status != http.StatusOK || d.Version != "1.0.0" {
		t.Fatalf("page: %d %s", r.Status, r.Body)
	}
	want := []catalog.SignerVerdict{{Signer: "publisher:" + publisher, Kind: policy.SignerPublisher, Signed: true}, {Signer: "attestation:org.pub", Kind: policy.SignerAttestation, Signed: true}}
	if !slices.Equal(d.Signer.Required, want) {
		t.Errorf("required signers: %+v, want %+v", d.Signer.Required, want)
	}
	if len(d.Versions) != 2 || d.Versions[0].Version != "1.1.0" || d.Versions[0].Status != catalog.StatusDenied || d.Versions[0].Rule != "publisher-and-org" ||
		!strings.Contains(d.Versions[0].Reason, "attestation:org.pub") {
		t.Errorf("versions: %+v", d.Versions)
	}
	if html := string(p.get(t, "/catalog/providers/example.com/test/hello").Body); !strings.Contains(html, `<code>attestation:org.pub</code> <span class="ok">signed</span>`) {
		t.Errorf("the page does not show the required signers:\n%s", html)
	}
}
