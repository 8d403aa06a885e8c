package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func zipPkg(os, arch, content string) ProviderPackage {
	data := []byte(content)
	return ProviderPackage{
		Platform: names.Platform{OS: os, Arch: arch},
		Zip:      ocispec.Descriptor{MediaType: MediaTypeZip, Digest: digest.FromBytes(data), Size: int64(len(data))},
		Open:     func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

// The platform manifest is byte-for-byte the known-good one from OpenTofu's
// own tests (docs/reference.md §1), and the index carries the artifact types tofu
// checks on descriptors and bodies.
func TestBuildProviderLayout(t *testing.T) {
	pkgs := []ProviderPackage{zipPkg("linux", "amd64", "zip-a"), zipPkg("darwin", "arm64", "zip-b")}
	prov, err := BuildProvenance(Provenance{Type: "x", Version: "1.0.0", Platforms: map[string]ProvenancePlatform{}},
		ProvenanceFiles{SHA256SUMS: NamedBytes{Name: "SUMS", Data: []byte("s")}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := BuildProvider(pkgs, prov)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.opentofu.provider-target",` +
		`"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"data":"e30="},` +
		`"layers":[{"mediaType":"archive/zip","digest":"` + digest.FromString("zip-b").String() + `","size":5}]}`
	if got := string(a.Manifests[0].Bytes); got != want {
		t.Fatalf("platform manifest:\n got %s\nwant %s", got, want)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(a.Manifests[len(a.Manifests)-1].Bytes, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != ArtifactTypeProvider || len(idx.Manifests) != 3 {
		t.Fatalf("index: %+v", idx)
	}
	for i, p := range []string{"darwin/arm64", "linux/amd64"} {
		d := idx.Manifests[i]
		if d.ArtifactType != ArtifactTypeProviderTarget || d.MediaType != ocispec.MediaTypeImageManifest || d.Platform == nil || d.Platform.OS+"/"+d.Platform.Architecture != p {
			t.Errorf("descriptor %d: %+v", i, d)
		}
	}
	if d := idx.Manifests[2]; d.ArtifactType != ArtifactTypeProvenance || d.Platform != nil {
		t.Errorf("provenance descriptor: %+v", d)
	}
	// Order of inputs does not matter: same digest.
	b, _ := BuildProvider([]ProviderPackage{pkgs[1], pkgs[0]}, prov)
	if a.Root().Digest != b.Root().Digest {
		t.Error("index digest depends on input order")
	}
	if _, err := BuildProvider([]ProviderPackage{pkgs[0], pkgs[0]}, nil); err == nil {
		t.Error("duplicate platform accepted")
	}
}

func newLayout(t *testing.T) *orasoci.Store {
	s, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPushThenReadProvider(t *testing.T) {
	ctx := context.Background()
	repo := newLayout(t)
	prov, _ := BuildProvenance(Provenance{Type: "x", Version: "1.0.0", Protocols: []string{"6.0"}, Platforms: map[string]ProvenancePlatform{"linux_amd64": {Filename: "f.zip", H1: "h1:x"}}},
		ProvenanceFiles{SHA256SUMS: NamedBytes{Name: "SUMS", Data: []byte("sums")}, Signature: NamedBytes{Name: "SUMS.sig", Data: []byte("sig")}})
	a, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "zip-a")}, prov)
	res, err := Push(ctx, repo, a, Tags{"1.0.0": ""}, PushOptions{})
	if err != nil || res.UpToDate || res.Uploaded == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	held, err := CurrentTags(ctx, repo, []string{"1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Push(ctx, repo, a, held, PushOptions{})
	if err != nil || !again.UpToDate || again.Uploaded != 0 {
		t.Fatalf("re-push: %+v %v", again, err)
	}
	versions, err := ListVersions(ctx, repo)
	if err != nil || len(versions) != 1 || versions[0].String() != "1.0.0" {
		t.Fatalf("%v %v", versions, err)
	}
	pv, err := ResolveProvider(ctx, repo, versions[0])
	if err != nil {
		t.Fatal(err)
	}
	md, ok := pv.Platforms[names.Platform{OS: "linux", Arch: "amd64"}]
	if !ok || pv.Provenance == nil {
		t.Fatalf("%+v", pv)
	}
	zip, err := ReadProviderPackage(ctx, repo, md)
	if err != nil || zip.Digest != digest.FromString("zip-a") {
		t.Fatalf("%+v %v", zip, err)
	}
	p, files, err := ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil || p.Platforms["linux_amd64"].H1 != "h1:x" || string(files.Signature.Data) != "sig" || files.SHA256SUMS.Name != "SUMS" || files.Keys.Data != nil {
		t.Fatalf("%+v %+v %v", p, files, err)
	}
}

// pushIndex writes a hand-made index (and its children) and tags it.
func pushIndex(t *testing.T, repo *orasoci.Store, children []Manifest, idx ocispec.Index) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	a := &Artifact{Blobs: []Blob{emptyConfig(), BytesBlob(MediaTypeZip, []byte("z"), nil)}}
	a.Manifests = append(a.Manifests, children...)
	root, err := encode(ocispec.MediaTypeImageIndex, idx.ArtifactType, struct {
		ocispec.Index
		SchemaVersion int `json:"schemaVersion"`
	}{idx, 2})
	if err != nil {
		t.Fatal(err)
	}
	a.Manifests = append(a.Manifests, root)
	if _, err := Push(ctx, repo, a, Tags{"1.0.0": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return root.Descriptor
}

func TestReadProviderIndexAppliesTofuChecks(t *testing.T) {
	ctx := context.Background()
	zipLayer := BytesBlob(MediaTypeZip, []byte("z"), nil).Descriptor
	good, _ := EncodeManifest(ocispec.Manifest{ArtifactType: ArtifactTypeProviderTarget, Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{zipLayer}})
	twoZips, _ := EncodeManifest(ocispec.Manifest{ArtifactType: ArtifactTypeProviderTarget, Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{zipLayer, zipLayer}})
	noType, _ := EncodeManifest(ocispec.Manifest{Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{zipLayer}})
	desc := func(m Manifest, os, arch string) ocispec.Descriptor {
		d := m.Descriptor
		d.ArtifactType = ArtifactTypeProviderTarget
		if os != "" {
			d.Platform = &ocispec.Platform{OS: os, Architecture: arch}
		}
		return d
	}
	cases := []struct {
		name     string
		children []Manifest
		idx      ocispec.Index
		want     string // error text from ReadProviderIndex or ReadProviderPackage
	}{
		{"wrong index artifactType", []Manifest{good}, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: "application/x", Manifests: []ocispec.Descriptor{desc(good, "linux", "amd64")}}, "artifactType"},
		{"duplicate platform", []Manifest{good}, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeProvider, Manifests: []ocispec.Descriptor{desc(good, "linux", "amd64"), desc(good, "linux", "amd64")}}, "more than one"},
		{"no platform", []Manifest{good}, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeProvider, Manifests: []ocispec.Descriptor{desc(good, "", "")}}, "lacks a platform"},
		{"two zip layers", []Manifest{twoZips}, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeProvider, Manifests: []ocispec.Descriptor{desc(twoZips, "linux", "amd64")}}, "ambiguous"},
		{"body lacks artifactType", []Manifest{noType}, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeProvider, Manifests: []ocispec.Descriptor{desc(noType, "linux", "amd64")}}, "artifactType"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := newLayout(t)
			root := pushIndex(t, repo, tc.children, tc.idx)
			pv, err := ReadProviderIndex(ctx, repo, root)
			if err == nil {
				for _, d := range pv.Platforms {
					if _, err = ReadProviderPackage(ctx, repo, d); err != nil {
						break
					}
				}
			}
			if err == nil || !errors.Is(err, ErrInvalidArtifact) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want invalid artifact mentioning %q, got %v", tc.want, err)
			}
		})
	}
}

// failingRepo fails the upload of one blob, as a dropped connection would.
type failingRepo struct {
	Repository
	fail digest.Digest
}

func (f failingRepo) Push(ctx context.Context, d ocispec.Descriptor, r io.Reader) error {
	if d.Digest == f.fail {
		return errors.New("connection reset")
	}
	return f.Repository.Push(ctx, d, r)
}

func TestPushIsAtomic(t *testing.T) {
	ctx := context.Background()
	store := newLayout(t)
	pkgs := []ProviderPackage{zipPkg("linux", "amd64", "a"), zipPkg("linux", "arm64", "b"), zipPkg("darwin", "arm64", "c")}
	a, _ := BuildProvider(pkgs, nil)
	_, err := Push(ctx, failingRepo{store, digest.FromString("b")}, a, Tags{"1.0.0": ""}, PushOptions{Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("want the upload error, got %v", err)
	}
	if _, err := store.Resolve(ctx, "1.0.0"); err == nil {
		t.Fatal("a failed push left a tag")
	}
	// Resuming uploads only what is missing, then tags.
	res, err := Push(ctx, store, a, Tags{"1.0.0": ""}, PushOptions{})
	if err != nil || res.Skipped == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if d, err := store.Resolve(ctx, "1.0.0"); err != nil || d.Digest != a.Root().Digest {
		t.Fatalf("%v %v", d, err)
	}
}

// A tag that another push moved while this one was under way is left
// alone, and the error names both digests.
func TestPushRefusesATagThatMoved(t *testing.T) {
	ctx := context.Background()
	store := newLayout(t)
	mine, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "mine")}, nil)
	theirs, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "theirs")}, nil)
	seen, err := CurrentTags(ctx, store, []string{"1.0.0"})
	if err != nil || seen["1.0.0"] != "" {
		t.Fatalf("%v %v", seen, err)
	}
	if _, err := Push(ctx, store, theirs, Tags{"1.0.0": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = Push(ctx, store, mine, seen, PushOptions{})
	if !errors.Is(err, ErrTagMoved) || !strings.Contains(err.Error(), theirs.Root().Digest.String()) || !strings.Contains(err.Error(), mine.Root().Digest.String()) {
		t.Fatalf("want ErrTagMoved naming both digests, got %v", err)
	}
	if d, _ := store.Resolve(ctx, "1.0.0"); d.Digest != theirs.Root().Digest {
		t.Fatal("the tag was replaced")
	}
}

// racingRepo writes another artifact's root under a tag right after each
// Tag call, as a concurrent push would.
type racingRepo struct {
	Repository
	theirs ocispec.Descriptor
}

func (r racingRepo) Tag(ctx context.Context, desc ocispec.Descriptor, tag string) error {
	if err := r.Repository.Tag(ctx, desc, tag); err != nil {
		return err
	}
	return r.Repository.Tag(ctx, r.theirs, tag)
}

// A tag replaced right after this push wrote it is reported too: the push
// does not claim a tag it no longer holds.
func TestPushReportsATagReplacedAfterItsWrite(t *testing.T) {
	ctx := context.Background()
	store := newLayout(t)
	mine, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "mine")}, nil)
	theirs, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "theirs")}, nil)
	if _, err := Push(ctx, store, theirs, Tags{"0.9.0": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Push(ctx, racingRepo{store, theirs.Root()}, mine, Tags{"1.0.0": ""}, PushOptions{})
	if !errors.Is(err, ErrTagMoved) || !strings.Contains(err.Error(), theirs.Root().Digest.String()) || !strings.Contains(err.Error(), "right after") {
		t.Fatalf("want ErrTagMoved naming the replacement, got %v", err)
	}
}

// validDigest, the listing's fast digest check, says what Validate says.
func TestValidDigestIsValidate(t *testing.T) {
	good := strings.Repeat("0123456789abcdef", 4)
	for _, d := range []digest.Digest{
		digest.Digest("sha256:" + good), digest.Digest("sha256:" + strings.ToUpper(good)), digest.Digest("sha256:" + good[:63]),
		digest.Digest("sha256:" + good + "0"), digest.Digest("sha256:" + good[:63] + "g"), "sha256:", "", "sha512:" + digest.Digest(good+good),
		"sha384:" + digest.Digest(good), digest.Digest("SHA256:" + good), digest.Digest("sha256:" + good[:32] + "/" + good[33:]),
	} {
		if got, want := validDigest(d) == nil, d.Validate() == nil; got != want {
			t.Errorf("validDigest(%q) valid=%v, Validate valid=%v", d, got, want)
		}
	}
}
