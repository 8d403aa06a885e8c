package oci

import (
	"context"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// ModuleZipTitle is the file name given to a module package layer, so that
// `oras pull` writes it as module.zip. OpenTofu ignores it.
const ModuleZipTitle = "module.zip"

// ModuleLayerDescriptor describes a module package zip as its layer.
func ModuleLayerDescriptor(d digest.Digest, size int64) ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType:   MediaTypeZip,
		Digest:      d,
		Size:        size,
		Annotations: map[string]string{AnnotationTitle: ModuleZipTitle},
	}
}

// BuildModule assembles a module package exactly as OpenTofu's oci://
// module source reads it (docs/reference.md §2): an image manifest with artifactType
// application/vnd.opentofu.modulepkg, the empty config and a single
// archive/zip layer. The manifest has no timestamps, so the same zip always
// gives the same digest.
func BuildModule(zip Blob) (*Artifact, error) {
	layer := zip.Descriptor
	if layer.Digest.Validate() != nil || layer.Digest.Algorithm() != digest.SHA256 {
		return nil, fmt.Errorf("module zip digest %q is not a valid sha256 digest", layer.Digest)
	}
	if layer.Size <= 0 {
		return nil, fmt.Errorf("module zip of %d bytes", layer.Size)
	}
	layer.MediaType = MediaTypeZip
	m, err := EncodeManifest(ocispec.Manifest{
		ArtifactType: ArtifactTypeModule,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
	})
	if err != nil {
		return nil, err
	}
	zip.Descriptor = layer
	return &Artifact{Blobs: []Blob{emptyConfig(), zip}, Manifests: []Manifest{m}}, nil
}

// ReadModule reads a module package manifest and returns its zip layer,
// applying OpenTofu's checks: an image manifest (not an index), no larger
// than 4 MiB, matching its digest, with artifactType
// application/vnd.opentofu.modulepkg and exactly one archive/zip layer.
func ReadModule(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	if err := checkModuleDescriptor(desc); err != nil {
		return ocispec.Descriptor{}, err
	}
	b, err := FetchManifest(ctx, repo, desc)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return ParseModule(desc, b)
}

// ParseModule checks a module package manifest's body as OpenTofu does and
// returns its zip layer.
func ParseModule(desc ocispec.Descriptor, b []byte) (ocispec.Descriptor, error) {
	if err := checkModuleDescriptor(desc); err != nil {
		return ocispec.Descriptor{}, err
	}
	m, err := DecodeManifest(desc, b)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if m.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, Invalid("manifest %s has mediaType %q", desc.Digest, m.MediaType)
	}
	if m.ArtifactType != ArtifactTypeModule {
		return ocispec.Descriptor{}, Invalid("manifest %s has artifactType %q, want %q: not a module package", desc.Digest, m.ArtifactType, ArtifactTypeModule)
	}
	return SingleZipLayer(m)
}

// ResolveModule reads the module manifest a tag or digest names (one
// round trip where the repository can, see FetchReference); it returns
// the manifest's and the zip layer's descriptors.
func ResolveModule(ctx context.Context, repo ReadOnlyRepository, reference string) (manifest, zip ocispec.Descriptor, err error) {
	manifest, b, err := FetchReference(ctx, repo, reference)
	if err != nil {
		return manifest, zip, fmt.Errorf("resolving %s: %w", reference, err)
	}
	zip, err = ParseModule(manifest, b)
	return manifest, zip, err
}

// checkModuleDescriptor: a module package is an image manifest.
func checkModuleDescriptor(desc ocispec.Descriptor) error {
	if desc.MediaType == ocispec.MediaTypeImageIndex {
		return Invalid("%s is an image index (a provider?), but a module package is an image manifest", desc.Digest)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return Invalid("%s has mediaType %q, but a module package is an OCI image manifest", desc.Digest, desc.MediaType)
	}
	return nil
}

// FetchBlob streams a blob to w, refusing one declared larger than maxSize
// and verifying size and digest as it goes. A short or corrupt blob is an
// error; w has then received unverified bytes, so write to a temporary file.
func FetchBlob(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor, maxSize int64, w io.Writer) error {
	if desc.Size < 0 || maxSize > 0 && desc.Size > maxSize {
		return Invalid("blob %s of %d bytes exceeds the %d byte limit", desc.Digest, desc.Size, maxSize)
	}
	if err := desc.Digest.Validate(); err != nil {
		return Invalid("blob digest %q: %v", desc.Digest, err)
	}
	r, err := repo.Fetch(ctx, desc)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	defer r.Close()
	vr := content.NewVerifyReader(r, desc)
	if _, err := io.Copy(w, vr); err != nil {
		return fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	if err := vr.Verify(); err != nil {
		return fmt.Errorf("blob %s from the registry is corrupt: %w", desc.Digest, err)
	}
	return nil
}

// ModuleRoot is the manifest descriptor BuildModule makes for a zip layer,
// known without the zip's bytes: a re-push can compare it with what its
// tags hold before packing anything.
func ModuleRoot(zip ocispec.Descriptor) (ocispec.Descriptor, error) {
	a, err := BuildModule(Blob{Descriptor: zip})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return a.Root(), nil
}
