package store

import (
	"context"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
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
	return idx, indexCost(len(body)), nil
}

// EntryAgrees reports whether what this store knows cheaply of version
// e.Version's tag agrees with e: when the tag's resolution is cached, it
// names e's digest, and that index has e's platforms and summary. (The
// tag list holding the tag is the caller's check.)
func (r *Repo) EntryAgrees(e versionindex.Entry) bool {
	tm, ok := r.s.byTag.Peek(r.tagKey("provider", names.TagForVersion(e.Version)))
	if !ok {
		return true
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
// round trip, in parallel; the index's outcome changes nothing else, and
// its read holds up the answer at most indexGrace past the tag's
// (awaitIndex): an index that is slow or hangs costs the hints, not the
// time. The index read goes on without the caller, to fill the cache,
// bounded by the store's Timeout.
func (r *Repo) ProviderVersionHinted(ctx context.Context, v names.Version) (*oci.ProviderVersion, error) {
	if _, ok := r.s.byTag.Peek(r.tagKey("provider", names.TagForVersion(v))); ok {
		return r.ProviderVersion(ctx, v)
	}
	indexRead := r.readVersionIndexAside(ctx)
	start := time.Now()
	pv, err := r.ProviderVersion(ctx, v)
	awaitIndex(ctx, indexRead, time.Since(start))
	return pv, err
}

// indexGrace is the least time a cold resolution waits for the version
// index after its tag was read (awaitIndex): the index is larger than a
// version's own index and is parsed whole.
const indexGrace = 50 * time.Millisecond

// readVersionIndexAside starts reading the version index into the cache,
// detached from ctx's end (a caller that stops waiting would otherwise
// cancel the read it shares), and is closed when the read ends; it is
// closed at once when the index is cached, or when it was read within
// ResolveTTL and is no longer cached (evicted early, its cost beyond the
// resolve cache's share: reading it for each cold version of a listing
// would only evict the versions' tags, and be evicted by them). Concurrent cold resolutions of one repository share
// one such read (one goroutine, not one each).
func (r *Repo) readVersionIndexAside(ctx context.Context) <-chan struct{} {
	key := r.tagKey("versions", versionindex.Tag)
	if _, ok := r.s.byTag.Peek(key); ok {
		return closed
	}
	if _, ok := r.s.readAside.Peek(key); ok {
		return closed
	}
	done := make(chan struct{})
	if running, loaded := r.s.indexReads.LoadOrStore(key, (<-chan struct{})(done)); loaded {
		return running.(<-chan struct{})
	}
	detached := context.WithoutCancel(ctx)
	go func() {
		defer close(done)
		defer r.s.indexReads.Delete(key)
		_ = cache.Recover(func() error { r.readIndexToKeep(detached, key); return nil }) // its outcome is the cache's
	}()
	return done
}

// readIndexToKeep reads the version index into the cache, noting in
// readAside when it was read.
func (r *Repo) readIndexToKeep(ctx context.Context, key string) {
	if r.VersionIndex(ctx) != nil {
		r.s.readAside.Add(key, struct{}{}, 0)
	}
}

// closed is a closed channel: a read that has nothing to wait for.
var closed = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// awaitIndex waits for indexRead at most as long again as the tag's read
// took (tagRead), and at least indexGrace, or until ctx ends.
func awaitIndex(ctx context.Context, indexRead <-chan struct{}, tagRead time.Duration) {
	t := time.NewTimer(max(tagRead, indexGrace))
	defer t.Stop()
	select {
	case <-indexRead:
	case <-t.C:
	case <-ctx.Done():
	}
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
