package oci

import ocispec "github.com/opencontainers/image-spec/specs-go/v1"

// Media and artifact types OpenTofu reads (docs/reference.md §1, §2).
const (
	// ArtifactTypeProvider marks the image index that a provider version tag points to.
	ArtifactTypeProvider = "application/vnd.opentofu.provider"
	// ArtifactTypeProviderTarget marks one platform's image manifest, on both
	// its descriptor in the index and its own body.
	ArtifactTypeProviderTarget = "application/vnd.opentofu.provider-target"
	// ArtifactTypeModule marks a module package image manifest.
	ArtifactTypeModule = "application/vnd.opentofu.modulepkg"
	// MediaTypeZip is the only layer media type OpenTofu installs from.
	MediaTypeZip = "archive/zip"

	MediaTypeIndex    = ocispec.MediaTypeImageIndex
	MediaTypeManifest = ocispec.MediaTypeImageManifest
)

// oci-tofu's own types: the provenance manifest carried inside a provider
// index. OpenTofu skips index descriptors whose artifactType is not
// ArtifactTypeProviderTarget, so these travel with the tag (crane cp, oras cp,
// regctl copy all copy an index's children) without affecting installs.
const (
	ArtifactTypeProvenance    = "application/vnd.oci-tofu.provider-provenance.v1"
	MediaTypeProvenanceConfig = "application/vnd.oci-tofu.provider-provenance.config.v1+json"
	MediaTypeSHA256SUMS       = "application/vnd.oci-tofu.sha256sums"
	MediaTypePGPSignature     = "application/pgp-signature"
	MediaTypePGPKeys          = "application/pgp-keys"
	MediaTypeReleaseManifest  = "application/vnd.oci-tofu.provider-release-manifest+json"
)

// AnnotationTitle names a layer's file, as oras push/pull use it.
const AnnotationTitle = ocispec.AnnotationTitle
