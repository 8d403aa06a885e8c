package store

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// The repository's version index (oci/versionindex): a hint checked
// against the tag list for listings, and the source of a cold version
// read's provenance hints; never trusted for what is served of a version
// (that is read from the version's own index and its provenance, each
// verified).

// VersionIndex is the repository's version index, read by tag and cached
// as a tag's resolution (ResolveTTL; a missing or refused one for
// FailureTTL): nil when the repository has none, or one that cannot be
// read or used (logged once per read), so that a listing reads every
// version as without an index.
func (r *Repo) VersionIndex(ctx context.Context) *versionindex.Index {
	tm, err := r.manifestByTag(ctx, "versions", versionindex.Tag, parseVersionIndex)
	switch {
	case err == nil:
		return tm.val.(*versionindex.Index)
	case FailureOf(err) != oci.FailureNotFound && ctx.Err() == nil:
		r.s.opts.Logger.Warn("the version index is not used; versions are read from their tags", "repository", r.name, "error", err.Error())
	}
	return nil
}

// parseVersionIndex reads a version index as the resolve cache keeps it.
func parseVersionIndex(desc ocispec.Descriptor, body []byte) (any, int64, error) {
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, 0, oci.Invalid("tag %s names a %s, not an image index", versionindex.Tag, desc.MediaType)
	}
	idx, err := versionindex.Parse(body)
	if err != nil {
		return nil, 0, err
	}
	return idx, idx.Cost(), nil
}

// EntryAgrees reports whether what this store knows cheaply of version
// e.Version's tag agrees with e: when the tag's resolution is cached, it
// names e's digest, and that index has e's platforms and summary; when
// the store read the tag but holds no index of it (it names something
// else, found broken), it named e's digest. (The tag list holding the
// tag is the caller's check.)
func (r *Repo) EntryAgrees(e versionindex.Entry) bool {
	tag := names.TagForVersion(e.Version)
	tm, ok := r.s.byTag.Peek(r.tagKey("provider", tag))
	if !ok {
		d, read := r.lastTagged(tag)
		return !read || d == e.Index.Digest
	}
	pv, isIndex := tm.val.(*oci.ProviderVersion)
	if !isIndex || tm.desc.Digest != e.Index.Digest {
		return false
	}
	pv = withVersion(pv, e.Version)
	got, ok := versionindex.EntryOf(pv)
	return ok && got.SameListing(e)
}

// ProviderVersionHinted is ProviderVersion that, when the tag's
// resolution is not cached, reads the repository's version index beside
// the tag: its entry's hints (provenanceHints) then let the version's
// provenance be read in one round trip instead of two. Both reads are one
// round trip, in parallel; the index's outcome changes nothing else.
func (r *Repo) ProviderVersionHinted(ctx context.Context, v names.Version) (*oci.ProviderVersion, error) {
	if _, ok := r.s.byTag.Peek(r.tagKey("provider", names.TagForVersion(v))); ok {
		return r.ProviderVersion(ctx, v)
	}
	var pv *oci.ProviderVersion
	var err error
	_ = r.s.Each(ctx, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			pv, err = r.ProviderVersion(ctx, v)
		} else {
			r.VersionIndex(ctx)
		}
		return nil
	})
	return pv, err
}

// provenanceHints are the blobs the cached version index says pv's
// provenance holds, when its entry is of pv's very index: nil when the
// index is not cached, lacks the version, or names another digest.
func (r *Repo) provenanceHints(pv *oci.ProviderVersion) []ocispec.Descriptor {
	tm, ok := r.s.byTag.Peek(r.tagKey("versions", versionindex.Tag))
	if !ok {
		return nil
	}
	idx, ok := tm.val.(*versionindex.Index)
	if !ok {
		return nil
	}
	e, ok := idx.Entries[pv.Version.String()]
	if !ok || e.Index.Digest != pv.Index.Digest {
		return nil
	}
	return e.ProvenanceBlobs
}
