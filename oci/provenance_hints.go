package oci

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
)

// MaxProvenanceHints bounds the blobs ReadProvenanceHinted fetches for
// hints: a provenance holds a config and four kinds of files.
const MaxProvenanceHints = 8

// MaxProvenanceHintBytes bounds the bytes ReadProvenanceHinted fetches
// for hints altogether: a provenance's config and files are a few
// kilobytes, while an index may hint MaxProvenanceHints blobs of
// MaxSmallFile bytes each, fetched for nothing when the manifest names
// none of them.
const MaxProvenanceHintBytes = MaxSmallFile

// earlyBlobs are the blobs fetched for hints, by digest, while the
// manifest naming them is read.
type earlyBlobs struct {
	repo  ReadOnlyRepository
	g     errgroup.Group
	blobs map[digest.Digest]*earlyBlob
}

// earlyBlob is one hinted blob's fetch: done closes when data or err is
// set.
type earlyBlob struct {
	size int64
	done chan struct{}
	data []byte
	err  error
}

// errNotFetched is a hinted fetch's outcome until it has one (a fetch
// that panicked keeps it).
var errNotFetched = errors.New("not fetched")

// prefetchBlobs starts fetching the first MaxProvenanceHints distinct
// hints, smallest first, as long as they fit MaxProvenanceHintBytes
// altogether; each is bounded and verified as FetchSmall bounds them. A
// hint of no size, or of more than MaxSmallFile, is not fetched.
func prefetchBlobs(ctx context.Context, repo ReadOnlyRepository, hints []ocispec.Descriptor) *earlyBlobs {
	e := &earlyBlobs{repo: repo, blobs: map[digest.Digest]*earlyBlob{}}
	var budget int64 = MaxProvenanceHintBytes
	for _, h := range smallestFirst(hints) {
		if len(e.blobs) == MaxProvenanceHints {
			break
		}
		if _, dup := e.blobs[h.Digest]; dup || h.Size <= 0 || h.Size > min(budget, MaxSmallFile) {
			continue
		}
		budget -= h.Size
		b := &earlyBlob{size: h.Size, done: make(chan struct{}), err: errNotFetched}
		e.blobs[h.Digest] = b
		desc := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: h.Digest, Size: h.Size}
		GoRecovered(&e.g, func() error {
			defer close(b.done)
			data, err := FetchSmall(ctx, repo, desc)
			b.data, b.err = data, err
			return nil
		})
	}
	return e
}

// smallestFirst are hints ordered by size (a stable sort of a copy): the
// files of an honest provenance are small, so a byte budget spent on
// the smallest keeps them.
func smallestFirst(hints []ocispec.Descriptor) []ocispec.Descriptor {
	out := slices.Clone(hints)
	slices.SortStableFunc(out, func(a, b ocispec.Descriptor) int { return cmp.Compare(a.Size, b.Size) })
	return out
}

// fetch is desc's content: the hinted fetch of its digest and size when
// one succeeded, otherwise fetched now.
func (e *earlyBlobs) fetch(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	if b, ok := e.blobs[desc.Digest]; ok && b.size == desc.Size {
		select {
		case <-b.done:
			if b.err == nil {
				return b.data, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return FetchSmall(ctx, e.repo, desc)
}

// stop cancels the hinted fetches no one used (cancel ends their context)
// and waits for them to end.
func (e *earlyBlobs) stop(cancel context.CancelFunc) {
	cancel()
	_ = e.g.Wait() // each fetch's outcome is its earlyBlob's
}
