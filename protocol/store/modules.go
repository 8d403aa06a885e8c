package store

import (
	"context"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Module reads the module package a tag names: its manifest's descriptor
// and its zip layer, with OpenTofu's checks.
func (r *Repo) Module(ctx context.Context, tag string) (manifest, zip ocispec.Descriptor, err error) {
	tm, err := r.manifestByTag(ctx, "body", tag, keepBody)
	if err != nil {
		return manifest, zip, err
	}
	zip, err = r.moduleZip(ctx, tm.desc, func(context.Context) ([]byte, error) { return tm.val.([]byte), nil })
	return tm.desc, zip, err
}

// ModuleAt reads the module package with manifest digest d, the exact
// package a download answer named, when tag names it (taggedAt).
func (r *Repo) ModuleAt(ctx context.Context, tag string, d digest.Digest) (ocispec.Descriptor, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := r.taggedAt(ctx, repo, "body", tag, d); err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d}
	return r.moduleZip(ctx, desc, func(ctx context.Context) ([]byte, error) {
		got, body, err := manifestAt(ctx, repo, d)
		if err == nil && got.MediaType != ocispec.MediaTypeImageManifest {
			_, err = oci.ParseModule(got, body)
		}
		return body, err
	})
}

func (r *Repo) moduleZip(ctx context.Context, desc ocispec.Descriptor, read func(context.Context) ([]byte, error)) (ocispec.Descriptor, error) {
	res, err := r.s.modules.Get(ctx, r.name+"@"+desc.Digest.String(), func(ctx context.Context) (ocispec.Descriptor, int64, error) {
		body, err := read(ctx)
		if err != nil {
			return ocispec.Descriptor{}, 0, err
		}
		z, err := oci.ParseModule(desc, body)
		return z, 256, err
	})
	if err != nil {
		return ocispec.Descriptor{}, r.fail(err, "reading a module package")
	}
	return res.Val, nil
}
