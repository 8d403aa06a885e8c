package attach

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Listing is a bounded listing of a subject's referrers of every
// artifact type: the first of them, as listed (descriptors with their
// artifact type and annotations), and how many were listed in all;
// More when the listing goes on beyond what was read.
type Listing struct {
	First []ocispec.Descriptor
	Total int
	More  bool
}

// errListed stops a listing read far enough.
var errListed = errors.New("listed enough")

// ListReferrers lists subject's referrers of every type, keeping the
// first keep: through the registry's referrers API (or its tag schema),
// at most MaxReferrerPages pages; in an OCI layout, its manifests whose
// subject is subject, of at most MaxReferrerScan examined.
func ListReferrers(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, keep int) (Listing, error) {
	var l Listing
	add := func(d ocispec.Descriptor) {
		if len(l.First) < keep {
			l.First = append(l.First, d)
		}
		l.Total++
	}
	if rl, ok := repo.(registry.ReferrerLister); ok {
		pages := 0
		err := rl.Referrers(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: subject}, "", func(page []ocispec.Descriptor) error {
			if pages++; pages > MaxReferrerPages {
				return errListed
			}
			for _, d := range page {
				add(d)
			}
			return nil
		})
		switch {
		case errors.Is(err, errListed):
			l.More = true
		case oci.IsNotFound(err): // no tag schema index: no referrers
		case err != nil:
			return Listing{}, fmt.Errorf("listing the referrers of %s: %w", subject, err)
		}
		return l, nil
	}
	g, ok := repo.(content.ReadOnlyGraphStorage)
	if !ok {
		return l, nil
	}
	more, err := listLayoutReferrers(ctx, repo, g, subject, add)
	l.More = more
	return l, err
}

// listLayoutReferrers adds the manifests of a layout whose subject is
// subject, of at most MaxReferrerScan examined (more: some were not).
func listLayoutReferrers(ctx context.Context, repo oci.ReadOnlyRepository, g content.ReadOnlyGraphStorage, subject digest.Digest, add func(ocispec.Descriptor)) (more bool, err error) {
	desc, err := repo.Resolve(ctx, subject.String())
	if oci.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	preds, err := g.Predecessors(ctx, desc)
	if err != nil {
		return false, err
	}
	for i, d := range preds {
		if i == MaxReferrerScan {
			return true, nil
		}
		m, ok := referringManifest(ctx, repo, d, subject)
		if !ok {
			continue
		}
		d.ArtifactType, d.Annotations = oci.ArtifactTypeOf(m), m.Annotations
		add(d)
	}
	return false, nil
}

// ListAttachment lists the layers of subject's cosign attachment of a
// kind (its .sig or .att tag), at most MaxAttachmentLayers, without
// their payloads, and how many layers it has in all: none when the tag
// does not exist.
func ListAttachment(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, kind AttachmentKind) ([]ocispec.Descriptor, int, error) {
	m, _, _, err := attachmentManifest(ctx, repo, subject, kind)
	if err != nil || m == nil {
		return nil, 0, err
	}
	return m.Layers[:min(len(m.Layers), MaxAttachmentLayers)], len(m.Layers), nil
}
