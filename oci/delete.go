package oci

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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
