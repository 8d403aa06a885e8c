package held

import (
	"context"
	"sync"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// A listing's hints (source.ListOptions.Hinted): the repository's version
// index, read beside the tag list's first page, says the summary and
// platforms of the versions it lists, so only the versions it lacks (or
// whose cached tag names another digest) are read from their tags.

// hints reads a repository's version index in the background and passes
// the versions a listing brings on to read unless the index covers them.
type hints struct {
	repo *store.Repo
	read func(names.Version) // reads a version the index does not cover

	mu      sync.Mutex
	known   bool // the index has been read (idx may still be nil)
	idx     *versionindex.Index
	pending []names.Version // brought before the index was read
	flushed sync.WaitGroup
}

// readHints starts reading repo's version index.
func readHints(ctx context.Context, repo *store.Repo, read func(names.Version)) *hints {
	h := &hints{repo: repo, read: read}
	h.flushed.Go(func() {
		idx := repo.VersionIndex(ctx)
		if idx != nil && !agrees(repo, idx) {
			idx = nil // one entry found lying: none is taken
		}
		h.mu.Lock()
		h.known, h.idx = true, idx
		pending := h.pending
		h.pending = nil
		h.mu.Unlock()
		for _, v := range pending {
			h.early(v)
		}
	})
	return h
}

// agrees reports whether every entry of idx agrees with what the store
// knows cheaply of its tag (store.Repo.EntryAgrees): an index found
// disagreeing once (stale or hostile) is not used at all, so a listing
// reads every version from its tag until the index is rewritten.
func agrees(repo *store.Repo, idx *versionindex.Index) bool {
	for _, e := range idx.Entries {
		if !repo.EntryAgrees(e) {
			return false
		}
	}
	return true
}

// early is a version a page of the tag list brought: read now unless the
// index covers it; kept until the index is known.
func (h *hints) early(v names.Version) {
	h.mu.Lock()
	if !h.known {
		h.pending = append(h.pending, v)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	if _, ok := h.entry(v); !ok {
		h.read(v)
	}
}

// wait waits until the index is read and every version brought before is
// passed on.
func (h *hints) wait() { h.flushed.Wait() }

// entry is v's entry, when the index lists it and it agrees with what
// the store knows of v's tag.
func (h *hints) entry(v names.Version) (versionindex.Entry, bool) {
	if h.idx == nil {
		return versionindex.Entry{}, false
	}
	e, ok := h.idx.Entries[v.String()]
	if !ok || !h.repo.EntryAgrees(e) {
		return versionindex.Entry{}, false
	}
	return e, true
}

// releases are the listing's releases the index says, for the versions l
// lists under their canonical tags (l.Unresolvable's are not).
func (h *hints) releases(p names.Provider, l source.ProviderListing) map[string]*source.ProviderRelease {
	out := map[string]*source.ProviderRelease{}
	for _, lv := range l.Versions {
		v := lv.Version
		if l.Unresolvable[v.String()] != "" {
			continue
		}
		if e, ok := h.entry(v); ok {
			out[v.String()] = hintedRelease(p, h.repo, e)
		}
	}
	return out
}

// hintedRelease is the release entry e says, for a listing's document.
func hintedRelease(p names.Provider, repo *store.Repo, e versionindex.Entry) *source.ProviderRelease {
	sum := e.Summary
	pv := &oci.ProviderVersion{Version: e.Version, Index: e.Index, Summary: &sum}
	root := &source.ProviderRoot{Provider: p, Version: e.Version, Root: &source.Root{Repo: repo, Digest: e.Index.Digest, Index: pv}}
	return &source.ProviderRelease{ProviderRoot: root, Protocols: sum.Protocols, SigningKeyIDs: sum.SigningKeyIDs,
		Platforms: append([]names.Platform(nil), e.Platforms...), Summarized: true, FromIndex: true}
}
