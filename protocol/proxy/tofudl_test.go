package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// pushTofuFixture verifies a fixture release as `oci-tofu push tofu` does
// and pushes it under its version tag.
func pushTofuFixture(t testing.TB, repo oci.Repository, version string) *pubrelease.Tofu {
	t.Helper()
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := pubrelease.ReadTofu(context.Background(), testenv.Testdata(t, "tofu", version), []*pgp.Keyring{kr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Push(context.Background(), repo, oci.PushOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	return rel
}

func fixtureFiles(t testing.TB, version string) []string {
	t.Helper()
	entries, err := os.ReadDir(testenv.Testdata(t, "tofu", version))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

type tofuAPIDoc struct {
	Versions []struct {
		ID    string   `json:"id"`
		Files []string `json:"files"`
	} `json:"versions"`
}

func tofuLayout(t testing.TB) (oci.Reference, oci.Repository) {
	t.Helper()
	ref := oci.Reference{Layout: true, Repository: filepath.Join(t.TempDir(), "opentofu")}
	client, _ := oci.NewClient(oci.Options{})
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	return ref, repo
}

// Releases pushed as `oci-tofu push tofu` pushes them, served as a TofuDL
// mirror: api.json newest first with plain file names, every file byte
// for byte, HEAD, and nothing that is not a release.
func TestTofuMirrorFromLayout(t *testing.T) {
	ref, repo := tofuLayout(t)
	for _, v := range []string{"1.8.0", "1.9.0", "1.10.0-beta1"} {
		pushTofuFixture(t, repo, v)
	}
	// Tags that are no TofuDL versions, and an artifact that is no release.
	push(t, repo, moduleArtifact(t, moduleZip(t, "x")), "1.7.0")
	push(t, repo, moduleArtifact(t, moduleZip(t, "x")), "latest")
	push(t, repo, moduleArtifact(t, moduleZip(t, "x")), "1.11.0-dev1")
	p := startProxy(t, Options{TofuRepository: &ref})

	var disco map[string]string
	p.getJSON(t, "/.well-known/terraform.json", 200, &disco)
	if len(disco) != 0 {
		t.Errorf("discovery with only tofu releases: %v", disco)
	}

	var doc tofuAPIDoc
	p.getJSON(t, "/tofu/api.json", 200, &doc)
	var ids []string
	for _, v := range doc.Versions {
		ids = append(ids, v.ID)
		if !slices.Equal(v.Files, fixtureFiles(t, v.ID)) {
			t.Errorf("%s files %v, want %v", v.ID, v.Files, fixtureFiles(t, v.ID))
		}
	}
	if !slices.Equal(ids, []string{"1.10.0-beta1", "1.9.0", "1.8.0"}) {
		t.Fatalf("api.json versions %v: want newest first, releases only", ids)
	}
	if !strings.Contains(p.logs.String(), "not a valid release artifact") {
		t.Errorf("the module under 1.7.0 was not logged as left out")
	}
	if r := p.do(t, http.MethodHead, "/tofu/api.json", nil); r.Status != 200 || len(r.Body) != 0 {
		t.Errorf("HEAD api.json: %d", r.Status)
	}

	for _, v := range []string{"1.8.0", "1.10.0-beta1"} {
		for _, name := range fixtureFiles(t, v) {
			want, _ := os.ReadFile(testenv.Testdata(t, "tofu", v, name))
			r := p.get(t, "/tofu/download/v"+v+"/"+name)
			if r.Err != nil || r.Status != 200 || !bytes.Equal(r.Body, want) {
				t.Fatalf("%s %s: %d %v, %d bytes", v, name, r.Status, r.Err, len(r.Body))
			}
			if r.Header.Get("Content-Type") != source.FileType(name) || r.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("%s: headers %v", name, r.Header)
			}
			if r.Header.Get("ETag") != `"`+digest.FromBytes(want).String()+`"` {
				t.Errorf("%s: ETag %q", name, r.Header.Get("ETag"))
			}
		}
	}
	if ct := source.FileType("tofu_1.9.0_linux_amd64.tar.gz"); ct != "application/gzip" {
		t.Errorf("tar.gz type %q", ct)
	}
	h := p.do(t, http.MethodHead, "/tofu/download/v1.9.0/tofu_1.9.0_SHA256SUMS", nil)
	sums, _ := os.ReadFile(testenv.Testdata(t, "tofu", "1.9.0", "tofu_1.9.0_SHA256SUMS"))
	if h.Status != 200 || len(h.Body) != 0 || h.Header.Get("Content-Length") != strconv.Itoa(len(sums)) || !strings.HasPrefix(h.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("HEAD SHA256SUMS: %d %v", h.Status, h.Header)
	}

	for _, c := range []struct{ path, msg string }{
		{"/tofu/download/v1.9.1/tofu_1.9.1_SHA256SUMS", "OpenTofu 1.9.1 is not in this mirror"},
		{"/tofu/download/v1.9.0/tofu_1.9.0_windows_amd64.zip", "has no file tofu_1.9.0_windows_amd64.zip"},
		{"/tofu/download/v1.9.0/tofu_1.8.0_linux_amd64.tar.gz", "has no file"},
		{"/tofu/api.json/x", ""},
		{"/tofu/other.json", ""},
	} {
		if c.msg == "" {
			if r := p.get(t, c.path); r.Status != 404 {
				t.Errorf("%s: %d", c.path, r.Status)
			}
			continue
		}
		p.wantError(t, c.path, http.StatusNotFound, c.msg)
	}
	// A version tag holding something else is the registry's fault.
	p.wantError(t, "/tofu/download/v1.7.0/tofu_1.7.0_SHA256SUMS", http.StatusBadGateway, "OCI registry")

	for _, path := range []string{
		"/tofu/download/1.9.0/tofu_1.9.0_SHA256SUMS",
		"/tofu/download/v1.9/tofu_1.9.0_SHA256SUMS",
		"/tofu/download/v01.9.0/tofu_1.9.0_SHA256SUMS",
		"/tofu/download/v1.9.0+build/tofu_1.9.0_SHA256SUMS",
		"/tofu/download/v1.10.0-dev1/tofu_1.10.0-dev1_SHA256SUMS",
		"/tofu/download/latest/tofu_1.9.0_SHA256SUMS",
		"/tofu/download/v1.9.0",
		"/tofu/download/v1.9.0/sub/tofu_1.9.0_SHA256SUMS",
		"/tofu/download/v1.9.0/..%2F..%2Fetc%2Fpasswd",
		"/tofu/download/v1.9.0/%2e%2e",
		"/tofu/download/v1.9.0/tofu%201.9.0",
		"/tofu/download/v1.9.0/tofu%00",
		"/tofu/download/v1.9.0/" + strings.Repeat("a", 256),
		"/tofu/download/v1.9.0//x",
	} {
		r := p.get(t, path)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"errors"`) {
			t.Errorf("%s: %d %s, want 400", path, r.Status, r.Body)
		}
	}
	if r := p.do(t, http.MethodPost, "/tofu/api.json", nil); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST api.json: %d", r.Status)
	}
	// Nothing else is served.
	for _, path := range []string{"/v1/mirror/example.com/a/b/index.json", "/v1/modules/a/b/c/versions"} {
		if r := p.get(t, path); r.Status != http.StatusNotFound {
			t.Errorf("%s: %d", path, r.Status)
		}
	}
}

// TofuDL's ordering: stable > rc > beta > alpha, pre-release numbers
// compared as numbers.
func TestCompareTofuVersions(t *testing.T) {
	in := []string{"1.9.0", "1.10.0-alpha1", "1.10.0-rc10", "1.10.0", "1.10.0-rc2", "1.10.0-beta1", "1.8.10", "1.8.9", "2.0.0-alpha1"}
	slices.SortFunc(in, func(a, b string) int { return -names.CompareTofuVersions(a, b) })
	want := []string{"2.0.0-alpha1", "1.10.0", "1.10.0-rc10", "1.10.0-rc2", "1.10.0-beta1", "1.10.0-alpha1", "1.9.0", "1.8.10", "1.8.9"}
	if !slices.Equal(in, want) {
		t.Fatalf("%v\nwant %v", in, want)
	}
}

// Crafted artifacts whose file list disagrees with their layers, or whose
// version is not their tag's, are left out of api.json and not served.
func TestTofuMirrorRefusesInconsistentArtifacts(t *testing.T) {
	ref, repo := tofuLayout(t)
	pushTofuFixture(t, repo, "1.9.0")
	ctx := context.Background()
	// 1.8.0's artifact under the tag 1.8.1.
	kr, _ := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	rel, err := pubrelease.ReadTofu(context.Background(), testenv.Testdata(t, "tofu", "1.8.0"), []*pgp.Keyring{kr})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rel.Artifact()
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, a, "1.8.1")
	// A config listing a digest that is not its layer's.
	files := append([]oci.Blob(nil), a.Blobs[1:]...)
	swapped := oci.BytesBlob(oci.MediaTypeReleaseFile, []byte("not the release file"), map[string]string{oci.AnnotationTitle: "tofu_1.8.0_linux_amd64.tar.gz"})
	cfg := oci.TofuRelease{Version: "1.8.0"}
	var layers []ocispec.Descriptor
	for _, f := range files {
		name := f.Descriptor.Annotations[oci.AnnotationTitle]
		l := f.Descriptor
		if name == swapped.Descriptor.Annotations[oci.AnnotationTitle] {
			l = swapped.Descriptor
		}
		layers = append(layers, l)
		cfg.Files = append(cfg.Files, oci.TofuReleaseFile{Name: name, Size: f.Descriptor.Size, SHA256: f.Descriptor.Digest.Encoded()})
	}
	cb, _ := json.Marshal(cfg)
	config := oci.BytesBlob(oci.MediaTypeTofuReleaseConfig, cb, nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: oci.ArtifactTypeTofuRelease, Config: config.Descriptor, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	crafted := &oci.Artifact{Blobs: append([]oci.Blob{config, swapped}, files...), Manifests: []oci.Manifest{m}}
	if _, err := oci.Push(ctx, repo, crafted, oci.Tags{"1.8.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}

	p := startProxy(t, Options{TofuRepository: &ref})
	var doc tofuAPIDoc
	p.getJSON(t, "/tofu/api.json", 200, &doc)
	if len(doc.Versions) != 1 || doc.Versions[0].ID != "1.9.0" {
		t.Fatalf("api.json %+v: only 1.9.0 is consistent", doc)
	}
	for _, path := range []string{"/tofu/download/v1.8.1/tofu_1.8.1_SHA256SUMS", "/tofu/download/v1.8.0/tofu_1.8.0_linux_amd64.tar.gz", "/tofu/download/v1.8.0/tofu_1.8.0_SHA256SUMS"} {
		p.wantError(t, path, http.StatusBadGateway, "OCI registry")
	}
	for _, want := range []string{"holds OpenTofu", "is not the listed file"} {
		if !strings.Contains(p.logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// Corrupt storage: the stream is aborted, never delivered whole.
func TestTofuMirrorDigestMismatchAbortsStream(t *testing.T) {
	ref, repo := tofuLayout(t)
	pushTofuFixture(t, repo, "1.9.0")
	p := startProxy(t, Options{TofuRepository: &ref})
	name := "tofu_1.9.0_linux_amd64.tar.gz"
	want, _ := os.ReadFile(testenv.Testdata(t, "tofu", "1.9.0", name))
	blob := filepath.Join(ref.Repository, "blobs", "sha256", sha256Hex(want))
	bad := slices.Clone(want)
	bad[len(bad)/2] ^= 0x20
	if err := os.WriteFile(blob, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	u := "/tofu/download/v1.9.0/" + name
	if got := p.get(t, u); got.Err == nil || len(got.Body) >= len(want) {
		t.Fatalf("corrupt file delivered: %d, %d bytes", got.Status, len(got.Body))
	}
	if n, err := downloadHTTP1(t, p, p.URL+u); err == nil || n >= len(want) {
		t.Fatalf("HTTP/1.1: corrupt file delivered: %d bytes", n)
	}
}

// Optional client authentication covers api.json and downloads.
func TestTofuMirrorClientAuthentication(t *testing.T) {
	ref, repo := tofuLayout(t)
	pushTofuFixture(t, repo, "1.9.0")
	token := "s3cret-token-0123456789"
	p := startProxy(t, Options{TofuRepository: &ref, AuthTokens: []string{token}})
	for _, path := range []string{"/tofu/api.json", "/tofu/download/v1.9.0/tofu_1.9.0_SHA256SUMS"} {
		if r := p.get(t, path); r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s without token: %d", path, r.Status)
		}
		if r := p.do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer " + token}); r.Status != 200 {
			t.Errorf("%s with token: %d %s", path, r.Status, r.Body)
		}
	}
	r := p.do(t, http.MethodGet, "/tofu/download/v1.9.0/tofu_1.9.0_SHA256SUMS", map[string]string{"Authorization": "Bearer " + token})
	if r.Header.Get("Cache-Control") != "private, no-store" {
		t.Errorf("authenticated download Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	if strings.Contains(p.logs.String(), token) {
		t.Errorf("token in the log")
	}
}

// An empty or missing repository is an empty mirror; registry failures
// are 5xx, never 404 or an empty list.
func TestTofuMirrorUpstream(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "tools/opentofu")
	fp := newFaultProxy(t, reg)
	opts := throughFaults()
	opts.TofuRepository = &oci.Reference{Registry: fp.host(), Repository: "tools/opentofu"}
	p := startProxy(t, opts)
	var doc tofuAPIDoc
	p.getJSON(t, "/tofu/api.json", 200, &doc)
	if len(doc.Versions) != 0 {
		t.Fatalf("api.json of a repository never pushed to: %+v", doc)
	}
	pushTofuFixture(t, repo, "1.9.0")
	p.getJSON(t, "/tofu/api.json", 200, &doc)
	if len(doc.Versions) != 1 {
		t.Fatalf("api.json after push: %+v", doc)
	}
	for _, c := range upstreamFaults {
		fp.mode.Store(c.mode)
		p.wantError(t, "/tofu/api.json", c.status, c.msg)
		p.wantError(t, "/tofu/download/v1.9.0/tofu_1.9.0_SHA256SUMS", c.status, c.msg)
	}
	fp.mode.Store("corrupt-blob")
	want, _ := os.ReadFile(testenv.Testdata(t, "tofu", "1.9.0", "tofu_1.9.0_linux_amd64.tar.gz"))
	if r := p.get(t, "/tofu/download/v1.9.0/tofu_1.9.0_linux_amd64.tar.gz"); r.Err == nil || len(r.Body) >= len(want) {
		t.Fatalf("a file corrupted by the registry was delivered: %d, %d bytes", r.Status, len(r.Body))
	}
	fp.mode.Store("")
	if r := p.get(t, "/tofu/download/v1.9.0/tofu_1.9.0_linux_amd64.tar.gz"); r.Err != nil || !bytes.Equal(r.Body, want) {
		t.Fatalf("after recovery: %v", r.Err)
	}

	down := startProxy(t, Options{Client: opts.Client, TofuRepository: &oci.Reference{Registry: "127.0.0.1:1", Repository: "tools/opentofu"}})
	down.wantError(t, "/tofu/api.json", http.StatusBadGateway, "unreachable")
}
