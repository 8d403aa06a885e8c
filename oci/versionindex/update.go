package versionindex

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// MaxRepairs bounds the versions one Update reads to add those the index
// lacks (a concurrent push's lost update, a copy of one tag by another
// tool): each is one registry request, so a push costs at most that many
// more; later pushes add the rest.
const MaxRepairs = 50

// MaxChecks bounds the entries one Update checks against their tags (one
// HEAD each), chosen at random: entries whose tag names another digest
// (moved by a tool that does not update the index) are dropped, and read
// again from their tags as missing ones.
const MaxChecks = 50

// Updated says what Update did.
type Updated struct {
	// Wrote: the index was written (nothing was when it already said
	// what the tags say, as far as Update looked).
	Wrote bool
	// Repaired counts versions added from their tags, Removed entries
	// whose version tag is gone, Dropped entries left out for size.
	Repaired, Removed, Dropped int
}

// Update sets e, a version whose tag was just written, in repo's version
// index: it reads the tag list and the index (an unreadable index is
// rewritten), keeps the entries of versions the tag list holds, adds or
// replaces e, adds up to MaxRepairs versions the tag list holds and the
// index lacks (newest first, read from their tags), and writes the index
// and moves Tag when anything changed. Concurrent Updates of different
// versions may lose one's entry (the last writer wins): the next Update
// repairs it, and readers read a missing version from its tag.
func Update(ctx context.Context, repo oci.Repository, e Entry) (Updated, error) {
	tags, err := oci.ListTagsBefore(ctx, repo, oci.TagSchemaTags, nil)
	if err != nil {
		return Updated{}, err
	}
	cur, err := Read(ctx, repo)
	if err != nil && !errors.Is(err, oci.ErrInvalidArtifact) && !errors.As(err, new(*oci.LimitError)) {
		return Updated{}, err
	}
	present := canonicalVersions(tags)
	var up Updated
	entries := map[string]Entry{}
	if cur != nil {
		for k, old := range cur.Entries {
			if _, ok := present[k]; ok {
				entries[k] = old
			} else {
				up.Removed++
			}
		}
	}
	stale := staleSample(ctx, repo, entries, e.Version)
	for _, k := range stale {
		delete(entries, k)
	}
	up.Removed += len(stale)
	changed := cur == nil || up.Removed > 0
	if old, ok := entries[e.Version.String()]; !ok || !old.Equal(e) {
		entries[e.Version.String()], changed = e, true
	}
	up.Repaired = repair(ctx, repo, present, entries)
	if !changed && up.Repaired == 0 {
		return up, nil
	}
	_, dropped, err := Write(ctx, repo, entries)
	if err != nil && refusedChild(err) {
		// An entry names a manifest the registry no longer holds (its tag
		// was moved by another tool, the old one deleted): keep only the
		// entries their tags agree with, and write again.
		var stale []string
		entries, stale = agreeing(ctx, repo, entries)
		up.Removed += len(stale)
		_, dropped, err = Write(ctx, repo, entries)
	}
	up.Dropped, up.Wrote = dropped, err == nil
	return up, err
}

// staleSample are the versions of up to MaxChecks entries (other than
// version skip's, chosen at random) whose tags name another digest: a tag
// moved by a tool that does not update the index is found by the pushes
// that follow, a few dozen entries each.
func staleSample(ctx context.Context, repo oci.ReadOnlyRepository, entries map[string]Entry, skip names.Version) []string {
	keys := make([]string, 0, len(entries))
	for k := range entries {
		if k != skip.String() {
			keys = append(keys, k)
		}
	}
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	sample := make(map[string]Entry, min(len(keys), MaxChecks))
	for _, k := range keys[:min(len(keys), MaxChecks)] {
		sample[k] = entries[k]
	}
	_, stale := agreeing(ctx, repo, sample)
	return stale
}

// refusedChild reports whether err is a registry refusing an index for
// a manifest it names that it does not hold.
func refusedChild(err error) bool {
	for _, c := range oci.ErrorCodes(err) {
		if c == "MANIFEST_BLOB_UNKNOWN" || c == "MANIFEST_UNKNOWN" || c == "BLOB_UNKNOWN" || c == "MANIFEST_INVALID" {
			return true
		}
	}
	return false
}

// agreeing are the entries whose version tags name their digests, and
// the versions of the others, sorted: one request per entry, a few at
// a time.
func agreeing(ctx context.Context, repo oci.ReadOnlyRepository, entries map[string]Entry) (map[string]Entry, []string) {
	keys := slices.Sorted(maps.Keys(entries))
	ok := make([]bool, len(keys))
	var g errgroup.Group
	g.SetLimit(repairConcurrency)
	for i, k := range keys {
		g.Go(func() error {
			desc, err := repo.Resolve(ctx, names.TagForVersion(entries[k].Version))
			ok[i] = err == nil && desc.Digest == entries[k].Index.Digest // each index by one goroutine
			return nil
		})
	}
	_ = g.Wait() // a tag that cannot be read disagrees
	out := map[string]Entry{}
	var stale []string
	for i, k := range keys {
		if ok[i] {
			out[k] = entries[k]
		} else {
			stale = append(stale, k)
		}
	}
	return out, stale
}

// Check is what repo's version index says against its tags, for verify
// and lint: one request per entry besides the tag list and the index.
type Check struct {
	// Present: the repository has an index; Entries it lists.
	Present bool
	Entries int
	// Stale are the versions whose entry the tags contradict (the tag is
	// gone or names another digest); Missing the versions tagged that
	// the index lacks (read from their tags by listings). Sorted.
	Stale, Missing []string
	// Refused says why the index cannot be read ("" when it can):
	// listings then read every version from its tag.
	Refused string
}

// Agrees reports whether the index says what the tags say (no index at
// all agrees: listings read the tags).
func (c Check) Agrees() bool { return c.Refused == "" && len(c.Stale) == 0 && len(c.Missing) == 0 }

// Verify checks repo's version index against its tags.
func Verify(ctx context.Context, repo oci.ReadOnlyRepository) (Check, error) {
	tags, err := oci.ListTagsBefore(ctx, repo, oci.TagSchemaTags, nil)
	if err != nil {
		return Check{}, err
	}
	if !slices.Contains(tags, Tag) {
		return Check{}, nil
	}
	idx, err := Read(ctx, repo)
	switch {
	case errors.Is(err, oci.ErrInvalidArtifact) || errors.As(err, new(*oci.LimitError)):
		return Check{Present: true, Refused: err.Error()}, nil
	case err != nil:
		return Check{}, err
	case idx == nil:
		return Check{}, nil
	}
	c := Check{Present: true, Entries: len(idx.Entries)}
	_, c.Stale = agreeing(ctx, repo, idx.Entries)
	for k := range canonicalVersions(tags) {
		if _, ok := idx.Entries[k]; !ok {
			c.Missing = append(c.Missing, k)
		}
	}
	slices.Sort(c.Missing)
	return c, nil
}

// Write encodes entries (Encode) and writes the index to repo, moving Tag
// to it: the index manifest written, and how many entries were left out
// for size.
func Write(ctx context.Context, repo oci.Repository, entries map[string]Entry) (oci.Manifest, int, error) {
	m, dropped, err := Encode(entries)
	if err != nil {
		return m, dropped, err
	}
	return m, dropped, write(ctx, repo, m)
}

// Read reads repo's version index: nil and no error when it has none.
func Read(ctx context.Context, repo oci.ReadOnlyRepository) (*Index, error) {
	desc, body, err := oci.FetchReference(ctx, repo, Tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, oci.Invalid("tag %s names a %s, not an image index", Tag, desc.MediaType)
	}
	return Parse(body)
}

// canonicalVersions are the versions whose canonical tags tags holds, by
// version.
func canonicalVersions(tags []string) map[string]names.Version {
	out := map[string]names.Version{}
	for _, t := range tags {
		if v, ok := names.ListedVersion(t); ok && names.TagForVersion(v) == t {
			out[v.String()] = v
		}
	}
	return out
}

// repair adds to entries up to MaxRepairs versions of present it lacks,
// the newest first, read from their tags; a version that cannot be read
// or has no provenance summary is passed over. It returns how many it
// added.
func repair(ctx context.Context, repo oci.ReadOnlyRepository, present map[string]names.Version, entries map[string]Entry) int {
	var missing names.VersionList
	for k, v := range present {
		if _, ok := entries[k]; !ok {
			missing = append(missing, v)
		}
	}
	missing.Sort()
	slices.Reverse(missing)
	missing = missing[:min(len(missing), MaxRepairs)]
	read := make([]*Entry, len(missing))
	var g errgroup.Group
	g.SetLimit(repairConcurrency)
	for i, v := range missing {
		g.Go(func() error {
			if e, ok := readEntry(ctx, repo, v); ok {
				read[i] = &e // each index by one goroutine
			}
			return nil
		})
	}
	_ = g.Wait() // every read's failure passes its version over
	added := 0
	for _, e := range read {
		if e != nil {
			entries[e.Version.String()] = *e
			added++
		}
	}
	return added
}

// repairConcurrency bounds repair's reads in flight.
const repairConcurrency = 8

// readEntry is version v's entry, read from its tag; ok is false when
// it cannot be read or has no provenance summary.
func readEntry(ctx context.Context, repo oci.ReadOnlyRepository, v names.Version) (Entry, bool) {
	desc, body, err := oci.FetchReference(ctx, repo, names.TagForVersion(v))
	if err != nil {
		return Entry{}, false
	}
	pv, err := oci.ParseProviderIndex(desc, body)
	if err != nil {
		return Entry{}, false
	}
	pv.Version = v
	return EntryOf(pv)
}

// write pushes the index manifest m and moves Tag to it.
func write(ctx context.Context, repo oci.Repository, m oci.Manifest) error {
	if rp, ok := repo.(registry.ReferencePusher); ok {
		return rp.PushReference(ctx, m.Descriptor, bytes.NewReader(m.Bytes), Tag)
	}
	if err := repo.Push(ctx, m.Descriptor, bytes.NewReader(m.Bytes)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	return repo.Tag(ctx, m.Descriptor, Tag)
}
