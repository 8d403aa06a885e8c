// Package versionindex is a provider repository's version index: one OCI
// image index, tagged Tag, whose manifests are the descriptors of every
// version's own index, each annotated with what a listing needs (the
// version, its platforms, its protocols and signing keys). One read of it
// gives a whole registry-protocol listing; it is a hint, checked against
// the tag list, never trusted for content (docs/artifacts.md, "The
// version index").
package versionindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

const (
	// Tag names the version index in a provider's repository. It sorts
	// before oci.TagSchemaTags, so a listing's tag list holds it, and is
	// no version (nor looks like one).
	Tag = "oci-tofu.versions"
	// ArtifactType is the version index's artifactType.
	ArtifactType = "application/vnd.oci-tofu.versions.v1"
	// AnnotationVersion is an entry's version (canonical, "1.2.3").
	AnnotationVersion = "vnd.oci-tofu.versions.version"
	// AnnotationPlatforms lists an entry's platforms, sorted,
	// comma-separated ("darwin_arm64,linux_amd64").
	AnnotationPlatforms = "vnd.oci-tofu.versions.platforms"
	// AnnotationProvenanceBlobs lists the blobs of an entry's provenance
	// (its config and files, oci.ProvenanceBlobs), sorted by digest,
	// comma-separated, each "<digest>+<size>": hints that let a cold read
	// of the version fetch them beside its provenance manifest. Optional.
	AnnotationProvenanceBlobs = "vnd.oci-tofu.versions.provenance-blobs"
	// MaxSize bounds the index read and written: the manifest size
	// Distribution and OpenTofu accept.
	MaxSize = oci.MaxManifestSize
	// MaxEntries bounds its entries: the versions a repository may list.
	MaxEntries = oci.MaxVersions
)

// Entry is one version as the index lists it.
type Entry struct {
	Version names.Version
	// Index is the descriptor of the version's own index (media type,
	// digest, size).
	Index ocispec.Descriptor
	// Platforms are its platforms, sorted.
	Platforms []names.Platform
	// Summary is what the version's index says of its provenance
	// (protocols, signing keys).
	Summary oci.ProvenanceSummary
	// ProvenanceBlobs are hints: the digests and sizes of the blobs of
	// the version's provenance (oci.ProvenanceBlobs), nil when unknown.
	// They are no part of what a listing says (SameListing): a read
	// uses one only when the provenance manifest names it.
	ProvenanceBlobs []ocispec.Descriptor
}

// EntryOf is the entry of a version read from its own index; ok is false
// for an index without a provenance summary (pushed by other tools or an
// early oci-tofu), which the index does not list: its listing needs the
// provenance read.
func EntryOf(pv *oci.ProviderVersion) (Entry, bool) {
	if pv == nil || pv.Summary == nil || len(pv.Platforms) == 0 {
		return Entry{}, false
	}
	idx := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: pv.Index.Digest, Size: pv.Index.Size}
	sum := oci.ProvenanceSummary{Protocols: slices.Clone(pv.Summary.Protocols), SigningKeyIDs: slices.Clone(pv.Summary.SigningKeyIDs)}
	return Entry{Version: pv.Version, Index: idx, Platforms: byName(pv.SortedPlatforms()), Summary: sum}, true
}

// Equal reports whether e and o say the same, hints included: an index
// whose entry differs from a version's pushed entry in anything is
// rewritten.
func (e Entry) Equal(o Entry) bool {
	return e.SameListing(o) && slices.EqualFunc(e.ProvenanceBlobs, o.ProvenanceBlobs, func(a, b ocispec.Descriptor) bool {
		return a.Digest == b.Digest && a.Size == b.Size
	})
}

// SameListing reports whether e and o say the same of the version's
// index, what a listing takes from an entry: all but the hints.
func (e Entry) SameListing(o Entry) bool {
	return e.Version.Same(o.Version) && e.Index.Digest == o.Index.Digest && e.Index.Size == o.Index.Size &&
		e.Index.MediaType == o.Index.MediaType && slices.Equal(e.Platforms, o.Platforms) &&
		slices.Equal(e.Summary.Protocols, o.Summary.Protocols) && slices.Equal(e.Summary.SigningKeyIDs, o.Summary.SigningKeyIDs)
}

// Index is a parsed version index: its entries by version ("1.2.3").
type Index struct {
	Entries map[string]Entry
	// Digest is its manifest's, when Read from a repository.
	Digest digest.Digest
}

// Parse reads a version index strictly: any entry it cannot read, a
// duplicate version, more than MaxEntries entries or more than MaxSize
// bytes refuse the whole index (a listing then reads every version as
// without one). It never panics.
func Parse(body []byte) (*Index, error) {
	if len(body) > MaxSize {
		return nil, oci.Beyond("the version index is %d bytes, more than the %d oci-tofu reads", len(body), MaxSize)
	}
	var idx ocispec.Index
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		return nil, oci.Invalid("the version index is not valid JSON: %s", clip(err.Error()))
	}
	if dec.More() {
		return nil, oci.Invalid("the version index has data after its JSON")
	}
	if idx.SchemaVersion != 2 || idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != ArtifactType {
		return nil, oci.Invalid("the version index has schemaVersion %d, mediaType %q, artifactType %q; want 2, %q, %q",
			idx.SchemaVersion, clip(idx.MediaType), clip(idx.ArtifactType), ocispec.MediaTypeImageIndex, ArtifactType)
	}
	if len(idx.Manifests) > MaxEntries {
		return nil, oci.Beyond("the version index has %d entries, more than the %d oci-tofu reads", len(idx.Manifests), MaxEntries)
	}
	out := &Index{Entries: make(map[string]Entry, len(idx.Manifests))}
	for i, d := range idx.Manifests {
		e, err := parseEntry(d)
		if err != nil {
			return nil, oci.Invalid("the version index's entry %d: %v", i, err)
		}
		key := e.Version.String()
		if _, dup := out.Entries[key]; dup {
			return nil, oci.Invalid("the version index lists %s twice", key)
		}
		out.Entries[key] = e
	}
	return out, nil
}

// Cost is about the memory x holds, for a cache's byte budget: far more
// than its manifest's size when its entries list many short platforms
// (each a 32-byte pair of string headers for 4 bytes of JSON).
func (x *Index) Cost() int64 {
	const (
		perEntry    = 512 // the map slot, the Entry, the version, its strings
		perPlatform = 32  // two string headers (the names share their annotation)
		perString   = 16  // a string header in Summary's lists
	)
	var n int64
	for k, e := range x.Entries {
		n += perEntry + int64(len(k)+len(e.Index.MediaType)+len(e.Index.Digest))
		n += int64(cap(e.Platforms)) * perPlatform
		for _, p := range e.Platforms {
			n += int64(len(p.OS) + len(p.Arch) + 2)
		}
		for _, s := range slices.Concat(e.Summary.Protocols, e.Summary.SigningKeyIDs) {
			n += perString + int64(len(s)+1)
		}
		n += int64(cap(e.ProvenanceBlobs)) * perHint
		for _, h := range e.ProvenanceBlobs {
			n += int64(len(h.Digest))
		}
	}
	return n
}

// perHint is the memory of a hint's descriptor, its digest's bytes aside.
const perHint = int64(unsafe.Sizeof(ocispec.Descriptor{}))

// parseEntry reads one entry's descriptor.
func parseEntry(d ocispec.Descriptor) (Entry, error) {
	if d.MediaType != ocispec.MediaTypeImageIndex {
		return Entry{}, fmt.Errorf("mediaType %q, want %q", clip(d.MediaType), ocispec.MediaTypeImageIndex)
	}
	if err := d.Digest.Validate(); err != nil || d.Digest.Algorithm() != digest.SHA256 {
		return Entry{}, fmt.Errorf("digest %q is no sha256 digest", clip(d.Digest.String()))
	}
	if d.Size <= 0 || d.Size > oci.MaxManifestSize {
		return Entry{}, fmt.Errorf("size %d out of range", d.Size)
	}
	v, err := names.ParseVersion(d.Annotations[AnnotationVersion])
	if err != nil || v.String() != d.Annotations[AnnotationVersion] {
		return Entry{}, fmt.Errorf("version %q is no canonical version", clip(d.Annotations[AnnotationVersion]))
	}
	platforms, err := parsePlatforms(d.Annotations[AnnotationPlatforms])
	if err != nil {
		return Entry{}, fmt.Errorf("version %s: %v", v, err)
	}
	protocols, ok := d.Annotations[oci.AnnotationProtocols]
	if !ok {
		return Entry{}, fmt.Errorf("version %s names no protocols", v)
	}
	sum := oci.ProvenanceSummary{Protocols: splitList(protocols), SigningKeyIDs: splitList(d.Annotations[oci.AnnotationSigningKeys])}
	blobs, err := parseBlobs(d.Annotations[AnnotationProvenanceBlobs])
	if err != nil {
		return Entry{}, fmt.Errorf("version %s: %v", v, err)
	}
	idx := ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
	return Entry{Version: v, Index: idx, Platforms: platforms, Summary: sum, ProvenanceBlobs: blobs}, nil
}

// parseBlobs reads AnnotationProvenanceBlobs: at most
// oci.MaxProvenanceHints sha256 digests, sorted and distinct, each with
// a size of 1 to oci.MaxSmallFile bytes.
func parseBlobs(s string) ([]ocispec.Descriptor, error) {
	list := splitList(s)
	if len(list) > oci.MaxProvenanceHints {
		return nil, fmt.Errorf("%d provenance blobs, more than %d", len(list), oci.MaxProvenanceHints)
	}
	var out []ocispec.Descriptor
	for i, item := range list {
		d, size, ok := strings.Cut(item, "+")
		n, err := strconv.ParseInt(size, 10, 64)
		if !ok || err != nil || n <= 0 || n > oci.MaxSmallFile || strconv.FormatInt(n, 10) != size {
			return nil, fmt.Errorf("provenance blob %q is no <digest>+<size>", item)
		}
		if err := digest.Digest(d).Validate(); err != nil || digest.Digest(d).Algorithm() != digest.SHA256 {
			return nil, fmt.Errorf("provenance blob digest %q is no sha256 digest", d)
		}
		if i > 0 && string(out[i-1].Digest) >= d {
			return nil, fmt.Errorf("provenance blobs %q are not sorted and distinct", s)
		}
		out = append(out, ocispec.Descriptor{Digest: digest.Digest(d), Size: n})
	}
	return out, nil
}

// formatBlobs is AnnotationProvenanceBlobs's value for blobs.
func formatBlobs(blobs []ocispec.Descriptor) string {
	items := make([]string, len(blobs))
	for i, b := range blobs {
		items[i] = b.Digest.String() + "+" + strconv.FormatInt(b.Size, 10)
	}
	return strings.Join(items, ",")
}

// parsePlatforms reads a sorted list of distinct platforms, at least one
// and at most oci.MaxIndexEntries.
func parsePlatforms(s string) ([]names.Platform, error) {
	list := splitList(s)
	if len(list) == 0 || len(list) > oci.MaxIndexEntries {
		return nil, fmt.Errorf("%d platforms, want 1 to %d", len(list), oci.MaxIndexEntries)
	}
	out := make([]names.Platform, 0, len(list))
	for i, p := range list {
		pl, err := names.ParsePlatform(p)
		if err != nil {
			return nil, fmt.Errorf("invalid platform %q: want os_arch, e.g. linux_amd64", clip(p))
		}
		if i > 0 && list[i-1] >= p {
			return nil, fmt.Errorf("platforms %q and %q are not sorted and distinct", clip(list[i-1]), clip(p))
		}
		out = append(out, pl)
	}
	return out, nil
}

// maxQuoted bounds what a refusal quotes of the index's text: it is
// logged by the proxy and printed by verify and lint, and a hostile index
// may hold megabytes in one field.
const maxQuoted = 64

// clip is s, or its first maxQuoted bytes (whole runes) and how long it
// is, for an error message.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Encode is the index manifest of entries, oldest version first. Entries
// that would take it beyond MaxSize are left out, the newest first (a
// listing reads those versions as without an index); dropped counts them.
func Encode(entries map[string]Entry) (m oci.Manifest, dropped int, err error) {
	list := make([]Entry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b Entry) int { return compareVersions(a.Version, b.Version) })
	if len(list) > MaxEntries {
		dropped, list = len(list)-MaxEntries, list[:MaxEntries]
	}
	for {
		idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactType, Manifests: descriptors(list)}
		b, err := json.Marshal(idx)
		if err != nil {
			return m, dropped, err
		}
		if len(b) <= MaxSize {
			desc := ocispec.Descriptor{MediaType: idx.MediaType, ArtifactType: ArtifactType, Digest: digest.FromBytes(b), Size: int64(len(b))}
			return oci.Manifest{Descriptor: desc, Bytes: b}, dropped, nil
		}
		cut := max(1, len(list)*(len(b)-MaxSize)/len(b)+1)
		dropped, list = dropped+cut, list[:len(list)-cut]
	}
}

// descriptors are the index's manifests for list.
func descriptors(list []Entry) []ocispec.Descriptor {
	out := make([]ocispec.Descriptor, len(list))
	for i, e := range list {
		ps := make([]string, len(e.Platforms))
		for j, p := range e.Platforms {
			ps[j] = p.String()
		}
		slices.Sort(ps)
		a := map[string]string{AnnotationVersion: e.Version.String(), AnnotationPlatforms: strings.Join(ps, ","),
			oci.AnnotationProtocols: strings.Join(e.Summary.Protocols, ",")}
		if len(e.Summary.SigningKeyIDs) > 0 {
			a[oci.AnnotationSigningKeys] = strings.Join(e.Summary.SigningKeyIDs, ",")
		}
		if len(e.ProvenanceBlobs) > 0 {
			a[AnnotationProvenanceBlobs] = formatBlobs(e.ProvenanceBlobs)
		}
		out[i] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: e.Index.Digest, Size: e.Index.Size, Annotations: a}
	}
	return out
}

// compareVersions orders versions oldest first.
func compareVersions(a, b names.Version) int {
	switch {
	case a.LessThan(b):
		return -1
	case b.LessThan(a):
		return 1
	}
	return 0
}

// byName sorts platforms by their names ("os_arch"), the order the
// index lists them in.
func byName(ps []names.Platform) []names.Platform {
	slices.SortFunc(ps, func(a, b names.Platform) int { return strings.Compare(a.String(), b.String()) })
	return ps
}

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
	if err != nil && !unusable(err) {
		return Updated{}, err
	}
	present := canonicalVersions(tags)
	var up Updated
	entries := map[string]Entry{}
	if cur != nil {
		entries = tagged(cur.Entries, present)
		up.Removed = len(cur.Entries) - len(entries)
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
	m, dropped, err := Encode(entries)
	if err != nil {
		return up, err
	}
	if cur != nil && cur.Digest == m.Descriptor.Digest {
		// What was added is what the size bound leaves out again (the
		// newest versions of a repository beyond it): nothing to write.
		up.Dropped = dropped
		return up, nil
	}
	err = write(ctx, repo, m)
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

// DropGone removes from repo's version index the entries of versions
// whose tags are gone (prune deleted them), so that it pins none of
// their manifests and agrees with the tags again; it returns how many it
// removed. A repository without an index, or with one that cannot be
// read (the next push rewrites it), is left alone; nothing is written
// when no entry's tag is gone.
func DropGone(ctx context.Context, repo oci.Repository) (int, error) {
	tags, err := oci.ListTagsBefore(ctx, repo, oci.TagSchemaTags, nil)
	if err != nil {
		return 0, err
	}
	if !slices.Contains(tags, Tag) {
		return 0, nil
	}
	cur, err := Read(ctx, repo)
	switch {
	case unusable(err):
		return 0, nil // listings do not use it; the next push rewrites it
	case err != nil:
		return 0, err
	case cur == nil:
		return 0, nil
	}
	kept := tagged(cur.Entries, canonicalVersions(tags))
	removed := len(cur.Entries) - len(kept)
	if removed == 0 {
		return 0, nil
	}
	_, _, err = Write(ctx, repo, kept)
	return removed, err
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
// and lint: one request per entry whose tag the tag list holds, besides
// the tag list and the index.
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
	case unusable(err):
		return Check{Present: true, Refused: err.Error()}, nil
	case err != nil:
		return Check{}, err
	case idx == nil:
		return Check{}, nil
	}
	c := Check{Present: true, Entries: len(idx.Entries)}
	present := canonicalVersions(tags)
	tagged := map[string]Entry{}
	for k, e := range idx.Entries {
		if _, ok := present[k]; ok {
			tagged[k] = e
		} else {
			c.Stale = append(c.Stale, k) // its tag is gone: nothing to read
		}
	}
	_, wrong := agreeing(ctx, repo, tagged)
	c.Stale = append(c.Stale, wrong...)
	for k := range present {
		if _, ok := idx.Entries[k]; !ok {
			c.Missing = append(c.Missing, k)
		}
	}
	slices.Sort(c.Stale)
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
		return nil, oci.Invalid("tag %s names a %s, not an image index", Tag, clip(desc.MediaType))
	}
	idx, err := Parse(body)
	if err != nil {
		return nil, err
	}
	idx.Digest = desc.Digest
	return idx, nil
}

// unusable reports whether err is an index Read found but cannot use
// (invalid, beyond its bounds): listings ignore it, the next push
// rewrites it.
func unusable(err error) bool {
	return errors.Is(err, oci.ErrInvalidArtifact) || errors.As(err, new(*oci.LimitError))
}

// tagged are the entries of the versions present holds.
func tagged(entries map[string]Entry, present map[string]names.Version) map[string]Entry {
	out := make(map[string]Entry, len(entries))
	for k, e := range entries {
		if _, ok := present[k]; ok {
			out[k] = e
		}
	}
	return out
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
			if e, ok := ReadEntry(ctx, repo, v); ok {
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

// ReadEntry is version v's entry, read from its tag (and its provenance
// manifest, for the hints); ok is false when it cannot be read or has no
// provenance summary.
func ReadEntry(ctx context.Context, repo oci.ReadOnlyRepository, v names.Version) (Entry, bool) {
	desc, body, err := oci.FetchReference(ctx, repo, names.TagForVersion(v))
	if err != nil {
		return Entry{}, false
	}
	pv, err := oci.ParseProviderIndex(desc, body)
	if err != nil {
		return Entry{}, false
	}
	pv.Version = v
	e, ok := EntryOf(pv)
	if ok && pv.Provenance != nil {
		e.ProvenanceBlobs = provenanceBlobsAt(ctx, repo, *pv.Provenance)
	}
	return e, ok
}

// provenanceBlobsAt are the hints of the provenance manifest desc names,
// read from repo: nil when it cannot be read (the entry is still right
// without them).
func provenanceBlobsAt(ctx context.Context, repo oci.ReadOnlyRepository, desc ocispec.Descriptor) []ocispec.Descriptor {
	m, err := oci.FetchImageManifest(ctx, repo, desc)
	if err != nil || m.ArtifactType != oci.ArtifactTypeProvenance {
		return nil
	}
	return hintsOf(oci.ProvenanceBlobs(m))
}

// hintsOf is blobs when they fit an entry's bounds, else nil.
func hintsOf(blobs []ocispec.Descriptor) []ocispec.Descriptor {
	if len(blobs) == 0 || len(blobs) > oci.MaxProvenanceHints {
		return nil
	}
	for _, b := range blobs {
		if b.Size <= 0 || b.Size > oci.MaxSmallFile || b.Digest.Validate() != nil || b.Digest.Algorithm() != digest.SHA256 {
			return nil
		}
	}
	return blobs
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

// EntryOfPushed is the entry of version v whose index, root, oci-tofu has
// just built and pushed with the manifests it names (decoded here, not
// re-checked as a read index is: oci.ParseProviderIndex checked what push
// builds); ok is false as for EntryOf. Its hints are those of the
// provenance manifest among manifests.
func EntryOfPushed(v names.Version, root oci.Manifest, manifests []oci.Manifest) (Entry, bool) {
	desc, body := root.Descriptor, root.Bytes
	var idx ocispec.Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return Entry{}, false
	}
	protocols, ok := idx.Annotations[oci.AnnotationProtocols]
	if !ok {
		return Entry{}, false
	}
	var ps []names.Platform
	var blobs []ocispec.Descriptor
	for _, m := range idx.Manifests {
		switch {
		case m.ArtifactType == oci.ArtifactTypeProviderTarget && m.Platform != nil:
			ps = append(ps, names.Platform{OS: m.Platform.OS, Arch: m.Platform.Architecture})
		case m.ArtifactType == oci.ArtifactTypeProvenance:
			blobs = pushedProvenanceBlobs(m.Digest, manifests)
		}
	}
	if len(ps) == 0 {
		return Entry{}, false
	}
	sum := oci.ProvenanceSummary{Protocols: splitList(protocols), SigningKeyIDs: splitList(idx.Annotations[oci.AnnotationSigningKeys])}
	d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: desc.Digest, Size: desc.Size}
	return Entry{Version: v, Index: d, Platforms: byName(ps), Summary: sum, ProvenanceBlobs: blobs}, true
}

// pushedProvenanceBlobs are the hints of the provenance manifest with
// digest d among manifests: nil when it is not there.
func pushedProvenanceBlobs(d digest.Digest, manifests []oci.Manifest) []ocispec.Descriptor {
	for _, m := range manifests {
		if m.Descriptor.Digest != d {
			continue
		}
		var pm ocispec.Manifest
		if json.Unmarshal(m.Bytes, &pm) != nil {
			return nil
		}
		return hintsOf(oci.ProvenanceBlobs(pm))
	}
	return nil
}
