package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
)

// Deleting, for `prune` (convert/prune): manifests are deleted by digest
// through the registry's DELETE API, one at a time, in an order the
// caller chooses (referrers before their subject, an index before its
// children). Blobs are left to the registry's garbage collection: a
// blob may be shared with other manifests and repositories, and every
// registry reclaims blobs no manifest references (Distribution with
// `registry garbage-collect`).

// ManifestDeleter deletes a manifest by its descriptor's digest; the
// registry drops the tags that named it.
type ManifestDeleter interface {
	Delete(ctx context.Context, target ocispec.Descriptor) error
}

// OpenDeleter opens a registry repository for deleting manifests. oras-go
// deletes a manifest that has a subject, on a registry without the
// referrers API, by first rewriting the subject's referrers tag schema
// index (sha256-<hex>) without it; prune deletes the subject and that
// index too, so the rewrite is only extra writes, and, on a registry
// that refuses deletes, it would leave the rewritten index behind before
// the refusal. Told that the registry has the API, oras-go sends the
// DELETE alone: the first thing prune writes is a DELETE, which either
// succeeds or changes nothing. OCI layouts are not supported.
func (c *Client) OpenDeleter(ref Reference) (ManifestDeleter, error) {
	if ref.Layout {
		return nil, fmt.Errorf("%s: deleting from an OCI layout is not supported (delete the layout and push what it should keep again)", ref.Name())
	}
	repo, err := c.remote(ref)
	if err != nil {
		return nil, err
	}
	if err := repo.SetReferrersCapability(true); err != nil {
		return nil, err
	}
	return repo.Manifests(), nil
}

// IsDeleteRefused reports whether err is a registry refusing deletes
// as such: 405 Method Not Allowed or UNSUPPORTED (Distribution with
// deletes disabled), or 403 DENIED (GHCR, whose registry API deletes
// nothing).
func IsDeleteRefused(err error) bool {
	switch StatusCode(err) {
	case http.StatusMethodNotAllowed, http.StatusForbidden:
		return true
	}
	return slices.Contains(ErrorCodes(err), "UNSUPPORTED") || slices.Contains(ErrorCodes(err), "DENIED")
}

// ListAllReferrers lists every referrer of subject, of any artifact type,
// through the registry's referrers API or its tag schema (oras-go falls
// back to the sha256-<hex> index). Unlike ReadReferrers, which reads a
// bounded number of one type, it fails rather than return part of a
// listing longer than MaxReferrerPages pages: deleting needs them all.
// A repository that cannot list referrers (an OCI layout) lists none.
func ListAllReferrers(ctx context.Context, repo ReadOnlyRepository, subject digest.Digest) ([]ocispec.Descriptor, error) {
	rl, ok := repo.(registry.ReferrerLister)
	if !ok {
		return nil, nil
	}
	var out []ocispec.Descriptor
	pages := 0
	err := rl.Referrers(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: subject}, "", func(page []ocispec.Descriptor) error {
		if pages++; pages > MaxReferrerPages {
			return Beyond("the referrers of %s run to more than %d pages", subject, MaxReferrerPages)
		}
		out = append(out, page...)
		return nil
	})
	if IsNotFound(err) {
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
func ReadLinks(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (Links, error) {
	b, err := FetchManifest(ctx, repo, desc)
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
		return Links{}, invalid("manifest %s is not valid JSON: %v", desc.Digest, err)
	}
	l := Links{ArtifactType: doc.ArtifactType, Manifests: doc.Manifests, Blobs: doc.Layers, Subject: doc.Subject}
	if doc.Config != nil {
		l.Blobs = append([]ocispec.Descriptor{*doc.Config}, l.Blobs...)
		if l.ArtifactType == "" {
			l.ArtifactType = doc.Config.MediaType
		}
	}
	if len(l.Manifests) > 0 && (doc.Config != nil || len(doc.Layers) > 0) {
		return Links{}, invalid("manifest %s lists both manifests and layers", desc.Digest)
	}
	return l, nil
}
