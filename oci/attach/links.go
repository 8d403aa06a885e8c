package attach

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
)

// ListAllReferrers lists every referrer of subject, of any artifact type,
// through the registry's referrers API or its tag schema (oras-go falls
// back to the sha256-<hex> index). Unlike ReadReferrers, which reads a
// bounded number of one type, it fails rather than return part of a
// listing longer than MaxReferrerPages pages: deleting needs them all.
// A repository that cannot list referrers (an OCI layout) lists none.
func ListAllReferrers(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest) ([]ocispec.Descriptor, error) {
	rl, ok := repo.(registry.ReferrerLister)
	if !ok {
		return nil, nil
	}
	var out []ocispec.Descriptor
	pages := 0
	err := rl.Referrers(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: subject}, "", func(page []ocispec.Descriptor) error {
		if pages++; pages > MaxReferrerPages {
			return oci.Beyond("the referrers of %s run to more than %d pages", subject, MaxReferrerPages)
		}
		out = append(out, page...)
		return nil
	})
	if oci.IsNotFound(err) {
		return nil, nil // no tag schema index: no referrers
	}
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s: %w", subject, err)
	}
	return out, nil
}

// Links are what a manifest or index refers to: the manifests an index
// lists, the config and layers an image manifest holds, and its subject.
type Links struct {
	// ArtifactType is the manifest's artifactType, else its config's
	// media type (as the referrers API reports a manifest's type).
	ArtifactType string
	Manifests    []ocispec.Descriptor
	Blobs        []ocispec.Descriptor
	Subject      *ocispec.Descriptor
}

// ReadLinks fetches the manifest or index desc names (bounded by
// MaxManifestSize, checked against its digest) and reads its links.
// Docker's manifest list and schema 2 manifest have the same fields as
// their OCI counterparts.
func ReadLinks(ctx context.Context, repo oci.ReadOnlyRepository, desc ocispec.Descriptor) (Links, error) {
	b, err := oci.FetchManifest(ctx, repo, desc)
	if err != nil {
		return Links{}, err
	}
	var doc struct {
		ArtifactType string               `json:"artifactType"`
		Manifests    []ocispec.Descriptor `json:"manifests"`
		Config       *ocispec.Descriptor  `json:"config"`
		Layers       []ocispec.Descriptor `json:"layers"`
		Subject      *ocispec.Descriptor  `json:"subject"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Links{}, oci.Invalid("manifest %s is not valid JSON: %v", desc.Digest, err)
	}
	l := Links{ArtifactType: doc.ArtifactType, Manifests: doc.Manifests, Blobs: doc.Layers, Subject: doc.Subject}
	if doc.Config != nil {
		l.Blobs = append([]ocispec.Descriptor{*doc.Config}, l.Blobs...)
		if l.ArtifactType == "" {
			l.ArtifactType = doc.Config.MediaType
		}
	}
	if len(l.Manifests) > 0 && (doc.Config != nil || len(doc.Layers) > 0) {
		return Links{}, oci.Invalid("manifest %s lists both manifests and layers", desc.Digest)
	}
	return l, nil
}
