package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// pushReferrer stores a referrer of version's index in repo, of
// artifactType, made distinct by note; its manifest's descriptor.
func pushReferrer(t *testing.T, repo oci.Repository, version, artifactType, note string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	root, err := repo.Resolve(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	layer := oci.BytesBlob("text/plain", []byte(note), nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: artifactType, Config: cfg.Descriptor, Layers: []ocispec.Descriptor{layer.Descriptor}, Subject: &root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, repo, &oci.Artifact{Blobs: []oci.Blob{layer, cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return m.Descriptor
}

// A provider version's page lists every artifact stored for its index
// in Distribution — the keyless attestation (the release admitted by
// the attestation rule serve has, none marked verified), the
// documentation, another referrer —
// with its artifact type, predicate type and digest; a version without
// any says so.
func TestCatalogProviderListsStoredArtifacts(t *testing.T) {
	reg, p := startFactsRegistry(t, "", Options{})
	repo := registryRepo(t, reg, "p/test/hello")
	attachDocsTo(t, repo, "1.0.0", map[string]string{"index.md": "# hello\n"})
	note := pushReferrer(t, repo, "1.0.0", "application/vnd.example.note", "a note")

	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	got := map[string]string{}
	for _, a := range d.Artifacts.Listed {
		v := "unchecked"
		if a.Verified != nil {
			v = fmt.Sprint(*a.Verified)
		}
		got[a.ArtifactType] = a.Via + " " + a.PredicateType + " " + v
		if !strings.HasPrefix(a.Digest, "sha256:") || a.Size <= 0 {
			t.Errorf("%+v", a)
		}
	}
	want := map[string]string{
		"application/vnd.dev.sigstore.bundle.v0.3+json":  "referrer " + pubrelease.ProviderPredicateType + " unchecked",
		"application/vnd.oci-tofu.provider.docs.v1+json": "referrer  unchecked",
		"application/vnd.example.note":                   "referrer  unchecked",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || d.Artifacts.Total != 3 || d.Artifacts.Rest != 0 || d.Artifacts.More || d.Artifacts.Note != "" {
		t.Errorf("stored artifacts: %v (%+v), want %v", got, d.Artifacts, want)
	}
	html := string(p.get(t, "/catalog/providers/example.com/test/hello/1.0.0").Body)
	for _, s := range []string{`<section id="artifacts">`, note.Digest.String(), `v1</code> <span class="muted">referrer, <code>sha256:`} {
		if !strings.Contains(html, s) {
			t.Errorf("the page lacks %q:\n%s", s, html)
		}
	}
}

// At most MaxReferrersShown stored artifacts are listed, the count of
// the rest said; without an attestation rule none is marked verified.
func TestCatalogProviderStoredArtifactsAreBounded(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/team-b/hello"})
	if err != nil {
		t.Fatal(err)
	}
	const stored = catalog.MaxReferrersShown + 6
	for i := 0; i < stored; i++ {
		pushReferrer(t, repo, "1.0.0", "application/vnd.example.note", fmt.Sprintf("note %d", i))
	}
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-b/hello/1.0.0", nil)
	a := d.Artifacts
	if r.Status != http.StatusOK || len(a.Listed) != catalog.MaxReferrersShown || a.Total != stored || a.Rest != 6 {
		t.Fatalf("%d: %d listed, total %d, rest %d", r.Status, len(a.Listed), a.Total, a.Rest)
	}
	for _, l := range a.Listed {
		if l.Verified != nil || l.ArtifactType != "application/vnd.example.note" {
			t.Errorf("%+v", l)
		}
	}
	if html := string(p.get(t, "/catalog/providers/example.com/team-b/hello/1.0.0").Body); !strings.Contains(html, `and 6 not listed here.`) {
		t.Errorf("the page does not count the rest:\n%s", html)
	}
	none, _ := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-a/hello/1.0.0", nil)
	if none.Artifacts.Total != 0 || none.Artifacts.Listed == nil {
		t.Errorf("none stored: %+v", none.Artifacts)
	}
	if html := string(p.get(t, "/catalog/providers/example.com/team-a/hello/1.0.0").Body); !strings.Contains(html, "None stored for this index.") {
		t.Errorf("the page does not say none is stored")
	}
}
