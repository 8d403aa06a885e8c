package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func moduleZipBlob() Blob {
	// The bytes need not be a zip for the artifact model.
	data := []byte("PK\x05\x06" + strings.Repeat("\x00", 18))
	b := BytesBlob(MediaTypeZip, data, nil)
	b.Descriptor = ModuleLayerDescriptor(b.Descriptor.Digest, b.Descriptor.Size)
	return b
}

func TestBuildModule(t *testing.T) {
	zip := moduleZipBlob()
	a, err := BuildModule(zip)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Manifests) != 1 || len(a.Blobs) != 2 {
		t.Fatalf("want one manifest and two blobs (config, zip), got %d and %d", len(a.Manifests), len(a.Blobs))
	}
	root := a.Root()
	if root.MediaType != ocispec.MediaTypeImageManifest || root.ArtifactType != ArtifactTypeModule {
		t.Fatalf("root descriptor %+v", root)
	}
	// The body, field by field, as OpenTofu reads it (docs/reference.md §2).
	var m map[string]any
	if err := json.Unmarshal(a.Manifests[0].Bytes, &m); err != nil {
		t.Fatal(err)
	}
	if m["schemaVersion"] != 2.0 || m["mediaType"] != ocispec.MediaTypeImageManifest || m["artifactType"] != "application/vnd.opentofu.modulepkg" {
		t.Fatalf("manifest header: %s", a.Manifests[0].Bytes)
	}
	cfg := m["config"].(map[string]any)
	if cfg["mediaType"] != "application/vnd.oci.empty.v1+json" || cfg["digest"] != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" || cfg["size"] != 2.0 {
		t.Fatalf("config: %v", cfg)
	}
	layers := m["layers"].([]any)
	if len(layers) != 1 {
		t.Fatalf("layers: %v", layers)
	}
	l := layers[0].(map[string]any)
	if l["mediaType"] != "archive/zip" || l["digest"] != zip.Descriptor.Digest.String() || l["size"] != float64(zip.Descriptor.Size) {
		t.Fatalf("layer: %v", l)
	}
	if _, ok := m["annotations"]; ok {
		t.Fatal("manifest carries annotations (timestamps would break reproducibility)")
	}
	// Same zip in, same digest out.
	b, _ := BuildModule(zip)
	if b.Root().Digest != root.Digest {
		t.Fatal("building twice gave two digests")
	}

	bad := zip
	bad.Descriptor.Digest = digest.Digest("md5:abc")
	if _, err := BuildModule(bad); err == nil {
		t.Fatal("accepted a non-sha256 digest")
	}
}

func layoutRepo(t *testing.T) Repository {
	t.Helper()
	c, err := NewClient(Options{Username: "x", Password: "y"}) // no docker config needed
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseReference(LayoutPrefix + filepath.Join(t.TempDir(), "layout"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func TestModuleRoundTrip(t *testing.T) {
	ctx := context.Background()
	repo := layoutRepo(t)
	zip := moduleZipBlob()
	a, _ := BuildModule(zip)
	if _, err := Push(ctx, repo, a, Tags{"1.0.0": "", "latest": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"1.0.0", "latest"} {
		m, layer, err := ResolveModule(ctx, repo, ref)
		if err != nil {
			t.Fatal(err)
		}
		if m.Digest != a.Root().Digest || layer.Digest != zip.Descriptor.Digest {
			t.Fatalf("%s resolved to %s / %s", ref, m.Digest, layer.Digest)
		}
		var buf bytes.Buffer
		if err := FetchBlob(ctx, repo, layer, 1<<20, &buf); err != nil {
			t.Fatal(err)
		}
		if digest.FromBytes(buf.Bytes()) != zip.Descriptor.Digest {
			t.Fatal("fetched zip differs")
		}
	}
	// Limits and verification on fetch.
	var buf bytes.Buffer
	_, layer, _ := ResolveModule(ctx, repo, "latest")
	if err := FetchBlob(ctx, repo, layer, 10, &buf); !errors.Is(err, ErrInvalidArtifact) {
		t.Fatalf("size limit: %v", err)
	}
	// Content that does not match its descriptor is caught.
	other := BytesBlob(MediaTypeZip, []byte("something else"), nil)
	if _, err := Push(ctx, repo, &Artifact{Blobs: []Blob{other}, Manifests: a.Manifests}, nil, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	liar := other.Descriptor
	liar.Size++
	if err := FetchBlob(ctx, repo, liar, 1<<20, &buf); err == nil {
		t.Fatal("a blob of the wrong size was accepted")
	}
}

func TestReadModuleRefuses(t *testing.T) {
	ctx := context.Background()
	repo := layoutRepo(t)
	zip := moduleZipBlob()
	push := func(tag string, m Manifest, blobs ...Blob) {
		t.Helper()
		blobs = append([]Blob{emptyConfig(), zip}, blobs...)
		if _, err := Push(ctx, repo, &Artifact{Blobs: blobs, Manifests: []Manifest{m}}, Tags{tag: ""}, PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	manifest := func(artifactType string, layers ...ocispec.Descriptor) Manifest {
		m, err := EncodeManifest(ocispec.Manifest{ArtifactType: artifactType, Config: ocispec.DescriptorEmptyJSON, Layers: layers})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	second := BytesBlob(MediaTypeZip, []byte("another zip"), nil)
	push("wrong-type", manifest("application/vnd.example.thing", zip.Descriptor))
	push("no-type", manifest("", zip.Descriptor))
	push("two-zips", manifest(ArtifactTypeModule, zip.Descriptor, second.Descriptor), second)
	push("no-zip", manifest(ArtifactTypeModule, BytesBlob("application/octet-stream", []byte("x"), nil).Descriptor), BytesBlob("application/octet-stream", []byte("x"), nil))
	idx, _ := EncodeIndex(ocispec.Index{ArtifactType: ArtifactTypeProvider, Manifests: []ocispec.Descriptor{manifest(ArtifactTypeModule, zip.Descriptor).Descriptor}})
	push("inner", manifest(ArtifactTypeModule, zip.Descriptor))
	if _, err := Push(ctx, repo, &Artifact{Manifests: []Manifest{idx}}, Tags{"index": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]string{
		"wrong-type": "not a module package",
		"no-type":    "not a module package",
		"two-zips":   "ambiguous",
		"no-zip":     "no archive/zip layer",
		"index":      "image index",
	} {
		_, _, err := ResolveModule(ctx, repo, tag)
		if !errors.Is(err, ErrInvalidArtifact) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an invalid-artifact error containing %q, got %v", tag, want, err)
		}
	}
	if _, _, err := ResolveModule(ctx, repo, "missing"); !IsNotFound(err) {
		t.Errorf("missing tag: %v", err)
	}
	if _, err := ReadModule(ctx, repo, ocispec.Descriptor{MediaType: MediaTypeManifest, Digest: zip.Descriptor.Digest, Size: MaxManifestSize + 1}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized manifest: %v", err)
	}
}

// A zip layer without a digest (or a malformed one) is refused with an
// error, never a panic: go-digest's Algorithm panics without a ':'.
func TestZipLayersWithoutADigestAreRefused(t *testing.T) {
	for _, d := range []digest.Digest{"", "sha256", "nocolon"} {
		if _, err := BuildModule(Blob{Descriptor: ocispec.Descriptor{MediaType: MediaTypeZip, Digest: d, Size: 3}}); err == nil {
			t.Errorf("BuildModule accepted the digest %q", d)
		}
		m := ocispec.Manifest{Layers: []ocispec.Descriptor{{MediaType: MediaTypeZip, Digest: d, Size: 3}}}
		if _, err := SingleZipLayer(m); err == nil {
			t.Errorf("SingleZipLayer accepted the digest %q", d)
		}
	}
}
