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
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

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

// Equal reports whether e and o say the same.
func (e Entry) Equal(o Entry) bool {
	return e.Version.Same(o.Version) && e.Index.Digest == o.Index.Digest && e.Index.Size == o.Index.Size &&
		e.Index.MediaType == o.Index.MediaType && slices.Equal(e.Platforms, o.Platforms) &&
		slices.Equal(e.Summary.Protocols, o.Summary.Protocols) && slices.Equal(e.Summary.SigningKeyIDs, o.Summary.SigningKeyIDs)
}

// Index is a parsed version index: its entries by version ("1.2.3").
type Index struct {
	Entries map[string]Entry
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
		return nil, oci.Invalid("the version index is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, oci.Invalid("the version index has data after its JSON")
	}
	if idx.SchemaVersion != 2 || idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != ArtifactType {
		return nil, oci.Invalid("the version index has schemaVersion %d, mediaType %q, artifactType %q; want 2, %q, %q",
			idx.SchemaVersion, idx.MediaType, idx.ArtifactType, ocispec.MediaTypeImageIndex, ArtifactType)
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

// parseEntry reads one entry's descriptor.
func parseEntry(d ocispec.Descriptor) (Entry, error) {
	if d.MediaType != ocispec.MediaTypeImageIndex {
		return Entry{}, fmt.Errorf("mediaType %q, want %q", d.MediaType, ocispec.MediaTypeImageIndex)
	}
	if err := d.Digest.Validate(); err != nil || d.Digest.Algorithm() != digest.SHA256 {
		return Entry{}, fmt.Errorf("digest %q is no sha256 digest", d.Digest)
	}
	if d.Size <= 0 || d.Size > oci.MaxManifestSize {
		return Entry{}, fmt.Errorf("size %d out of range", d.Size)
	}
	v, err := names.ParseVersion(d.Annotations[AnnotationVersion])
	if err != nil || v.String() != d.Annotations[AnnotationVersion] {
		return Entry{}, fmt.Errorf("version %q is no canonical version", d.Annotations[AnnotationVersion])
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
	idx := ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
	return Entry{Version: v, Index: idx, Platforms: platforms, Summary: sum}, nil
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
			return nil, err
		}
		if i > 0 && list[i-1] >= p {
			return nil, fmt.Errorf("platforms %q are not sorted and distinct", s)
		}
		out = append(out, pl)
	}
	return out, nil
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
