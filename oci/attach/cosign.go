package attach

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Cosign's attachments, stored as cosign stores them for registries
// without the OCI 1.1 referrers API (the "tag schema"): an image manifest
// tagged sha256-<hex>.sig (signatures) or sha256-<hex>.att (attestations)
// in the subject's repository, one layer per signature or attestation
// (docs/artifacts.md, "Signatures and attestations"). The layout follows
// github.com/sigstore/cosign/v3 pkg/oci/static, pkg/oci/empty and
// pkg/types; the config is the one go-containerregistry writes for
// cosign's empty image with layers appended.
const (
	// MediaTypeCosignSimpleSigning is a signature layer: the simple-signing
	// payload, its signature base64 in AnnotationCosignSignature.
	MediaTypeCosignSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
	// MediaTypeDSSEEnvelope is an attestation layer: a DSSE envelope
	// (the signature is inside; AnnotationCosignSignature is empty).
	MediaTypeDSSEEnvelope = "application/vnd.dsse.envelope.v1+json"
	// AnnotationCosignSignature carries a layer's base64 signature.
	AnnotationCosignSignature = "dev.cosignproject.cosign/signature"
	// AnnotationPredicateType names an attestation layer's predicate type.
	AnnotationPredicateType = "predicateType"
	// MaxAttachmentLayers bounds the layers of one attachment manifest we
	// read or write.
	MaxAttachmentLayers = 64
)

// AttachmentKind is the tag suffix of a cosign attachment.
type AttachmentKind string

// The attachment kinds cosign writes with the tag schema.
const (
	CosignSignatures   AttachmentKind = "sig"
	CosignAttestations AttachmentKind = "att"
)

// AttachmentTag is the tag cosign gives a subject's attachment of a kind:
// sha256-<hex>.sig or sha256-<hex>.att.
func AttachmentTag(subject digest.Digest, kind AttachmentKind) string {
	return string(subject.Algorithm()) + "-" + subject.Encoded() + "." + string(kind)
}

// IsAttachmentTag reports whether tag is a cosign tag-schema tag
// (sha256-<hex>.sig, .att, .sbom) or the OCI 1.1 referrers tag schema's
// (sha256-<hex>, where cosign v3, notation and oras list referrers on
// registries without the referrers API): not a version, never listed as
// one.
func IsAttachmentTag(tag string) bool {
	hex, ok := strings.CutPrefix(tag, "sha256-")
	if !ok {
		return false
	}
	hex, _, _ = strings.Cut(hex, ".")
	return len(hex) == 64 && digest.NewDigestFromEncoded(digest.SHA256, hex).Validate() == nil
}

// AttachmentLayer is one signature or attestation: its media type, payload
// and annotations.
type AttachmentLayer struct {
	MediaType   string
	Payload     []byte
	Annotations map[string]string
}

// attachmentManifest is the manifest of subject's attachment of a kind,
// its digest and its tag: nil (and no error) when the tag does not exist.
func attachmentManifest(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, kind AttachmentKind) (*ocispec.Manifest, digest.Digest, string, error) {
	tag := AttachmentTag(subject, kind)
	desc, b, err := oci.FetchReference(ctx, repo, tag)
	if oci.IsNotFound(err) {
		return nil, "", tag, nil
	}
	if err != nil {
		return nil, "", tag, fmt.Errorf("reading %s: %w", tag, err)
	}
	m, err := oci.DecodeManifest(desc, b)
	if err != nil {
		return nil, "", tag, err
	}
	return &m, desc.Digest, tag, nil
}

// ReadAttachment reads the layers of a subject's attachment of a kind:
// none (and no error) when its tag does not exist. Reads are bounded: the
// manifest by MaxManifestSize, its layers by MaxAttachmentLayers, each
// payload by MaxSmallFile; every blob is checked against its digest.
func ReadAttachment(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, kind AttachmentKind) ([]AttachmentLayer, error) {
	layers, _, err := ReadAttachmentHeld(ctx, repo, subject, kind)
	return layers, err
}

// ReadAttachmentHeld is ReadAttachment that also returns the digest the
// attachment's tag holds ("" when it does not exist): what
// ReplaceAttachment is told, so that it need not ask again.
func ReadAttachmentHeld(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, kind AttachmentKind) ([]AttachmentLayer, digest.Digest, error) {
	m, held, tag, err := attachmentManifest(ctx, repo, subject, kind)
	if err != nil || m == nil {
		return nil, "", err
	}
	if len(m.Layers) > MaxAttachmentLayers {
		return nil, "", oci.Invalid("%s has %d layers, more than the %d read", tag, len(m.Layers), MaxAttachmentLayers)
	}
	out := make([]AttachmentLayer, 0, len(m.Layers))
	for _, l := range m.Layers {
		payload, err := oci.FetchSmall(ctx, repo, l)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", tag, err)
		}
		out = append(out, AttachmentLayer{MediaType: l.MediaType, Payload: payload, Annotations: l.Annotations})
	}
	return out, held, nil
}

// WriteAttachment writes a subject's attachment of a kind holding exactly
// layers, and moves its tag to it (a pointer tag: Push's checks for tags
// that move during the push apply). The caller decides which earlier
// layers to keep (ReadAttachment).
func WriteAttachment(ctx context.Context, repo oci.Repository, subject digest.Digest, kind AttachmentKind, layers []AttachmentLayer) (ocispec.Descriptor, error) {
	tag := AttachmentTag(subject, kind)
	tags, err := oci.CurrentTags(ctx, repo, []string{tag})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return ReplaceAttachment(ctx, repo, subject, kind, layers, tags[tag])
}

// ReplaceAttachment is WriteAttachment for a caller that knows what the
// tag holds ("" for none: ReadAttachmentHeld, or a subject this push
// wrote): the tag is written only if it holds that still (Push's checks).
// The manifest is sent with its tag, one request (oci.Push).
func ReplaceAttachment(ctx context.Context, repo oci.Repository, subject digest.Digest, kind AttachmentKind, layers []AttachmentLayer, held digest.Digest) (ocispec.Descriptor, error) {
	a, err := BuildAttachment(layers)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	tag := AttachmentTag(subject, kind)
	// Made now (a new signature, a config naming it): written without
	// asking the registry first; a kept layer it holds is taken again.
	res, err := oci.Push(ctx, repo, a, oci.Tags{tag: held}, oci.PushOptions{Fresh: true})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("writing %s: %w", tag, err)
	}
	return res.Root, nil
}

// BuildAttachment builds the manifest cosign writes for layers: an OCI
// image manifest with go-containerregistry's image config, one layer per
// payload, each annotated.
func BuildAttachment(layers []AttachmentLayer) (*oci.Artifact, error) {
	if len(layers) == 0 || len(layers) > MaxAttachmentLayers {
		return nil, fmt.Errorf("an attachment holds 1 to %d layers, not %d", MaxAttachmentLayers, len(layers))
	}
	a := &oci.Artifact{}
	m := ocispec.Manifest{Layers: make([]ocispec.Descriptor, len(layers))}
	diffIDs := make([]digest.Digest, len(layers))
	for i, l := range layers {
		b := oci.BytesBlob(l.MediaType, l.Payload, l.Annotations)
		a.Blobs = append(a.Blobs, b)
		m.Layers[i] = b.Descriptor
		diffIDs[i] = b.Descriptor.Digest
	}
	config, err := attachmentConfig(diffIDs)
	if err != nil {
		return nil, err
	}
	cb := oci.BytesBlob(ocispec.MediaTypeImageConfig, config, nil)
	a.Blobs = append(a.Blobs, cb)
	m.Config = cb.Descriptor
	mf, err := oci.EncodeManifest(m)
	if err != nil {
		return nil, err
	}
	a.Manifests = []oci.Manifest{mf}
	return a, nil
}

// attachmentConfig is the config go-containerregistry gives cosign's
// empty image after appending layers (uncompressed: diff IDs are the
// layer digests), field for field.
func attachmentConfig(diffIDs []digest.Digest) ([]byte, error) {
	type history struct {
		Created string `json:"created"`
	}
	type rootFS struct {
		Type    string          `json:"type"`
		DiffIDs []digest.Digest `json:"diff_ids"`
	}
	hist := make([]history, len(diffIDs))
	for i := range hist {
		hist[i].Created = zeroTime
	}
	return json.Marshal(struct {
		Architecture string         `json:"architecture"`
		Created      string         `json:"created"`
		History      []history      `json:"history"`
		OS           string         `json:"os"`
		RootFS       rootFS         `json:"rootfs"`
		Config       map[string]any `json:"config"`
	}{Created: zeroTime, History: hist, RootFS: rootFS{Type: "layers", DiffIDs: diffIDs}, Config: map[string]any{}})
}

// zeroTime is how go-containerregistry writes an unset time.
const zeroTime = "0001-01-01T00:00:00Z"
