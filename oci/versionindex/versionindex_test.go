package versionindex

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// entry is a made-up entry of version v with n platforms.
func entry(v string, n int) Entry {
	var ps []names.Platform
	for i := range n {
		ps = append(ps, names.Platform{OS: "os", Arch: fmt.Sprintf("arch%03d", i)})
	}
	return Entry{Version: names.MustParseVersion(v), Platforms: ps,
		Index:           ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromString(v), Size: 3000},
		Summary:         oci.ProvenanceSummary{Protocols: []string{"5.0", "6.0"}, SigningKeyIDs: []string{"0123456789ABCDEF"}},
		ProvenanceBlobs: hints(v, 5)}
}

// hints are n made-up provenance hints of version v, sorted as an entry
// holds them: a provenance's config and four files.
func hints(v string, n int) []ocispec.Descriptor {
	var out []ocispec.Descriptor
	for i := range n {
		out = append(out, ocispec.Descriptor{Digest: digest.FromString(fmt.Sprint(v, i)), Size: int64(100 + i)})
	}
	slices.SortFunc(out, func(a, b ocispec.Descriptor) int { return strings.Compare(string(a.Digest), string(b.Digest)) })
	return out
}

// entries are n versions of 15 platforms each, as Encode takes them.
func entries(n, platforms int) map[string]Entry {
	out := map[string]Entry{}
	for i := range n {
		v := fmt.Sprintf("%d.%d.%d", 1+i/10000, (i/100)%100, i%100)
		out[v] = entry(v, platforms)
	}
	return out
}

func TestEncodeParseRoundTrip(t *testing.T) {
	in := entries(30, 3)
	unsigned := entry("0.1.0", 1)
	unsigned.Summary.SigningKeyIDs = nil
	in["0.1.0"] = unsigned
	unhinted := entry("0.2.0", 2)
	unhinted.ProvenanceBlobs = nil // pushed by an oci-tofu before hints
	in["0.2.0"] = unhinted
	m, dropped, err := Encode(in)
	if err != nil || dropped != 0 {
		t.Fatal(err, dropped)
	}
	if m.Descriptor.ArtifactType != ArtifactType || m.Descriptor.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("descriptor %+v", m.Descriptor)
	}
	idx, err := Parse(m.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Entries) != len(in) {
		t.Fatalf("%d entries, want %d", len(idx.Entries), len(in))
	}
	for k, e := range in {
		if !idx.Entries[k].Equal(e) {
			t.Errorf("%s: %+v, want %+v", k, idx.Entries[k], e)
		}
	}
	again, _, _ := Encode(idx.Entries)
	if string(again.Bytes) != string(m.Bytes) {
		t.Error("encoding the parsed index gives other bytes")
	}
}

// TestEncodeSizes: issue 44's largest provider, 2,000 versions of 15
// platforms, fits in one index well within MaxSize; beyond MaxSize the
// newest entries are left out and the rest still fits.
func TestEncodeSizes(t *testing.T) {
	m, dropped, err := Encode(entries(2000, 15))
	if err != nil || dropped != 0 {
		t.Fatal(err, dropped)
	}
	t.Logf("2,000 versions × 15 platforms: %d bytes (%d per version)", len(m.Bytes), len(m.Bytes)/2000)
	if len(m.Bytes) > MaxSize/2 {
		t.Errorf("%d bytes, want at most half of %d", len(m.Bytes), MaxSize)
	}
	m, dropped, err = Encode(entries(5000, 60))
	if err != nil {
		t.Fatal(err)
	}
	if dropped == 0 || len(m.Bytes) > MaxSize {
		t.Fatalf("%d bytes, %d dropped", len(m.Bytes), dropped)
	}
	idx, err := Parse(m.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Entries)+dropped != 5000 {
		t.Errorf("%d kept + %d dropped, want 5,000", len(idx.Entries), dropped)
	}
	if _, ok := idx.Entries["1.0.0"]; !ok {
		t.Error("the oldest version was left out; the newest go first")
	}
	if _, ok := idx.Entries["1.49.99"]; ok {
		t.Error("the newest version was kept")
	}
	t.Logf("5,000 versions × 60 platforms: %d kept in %d bytes, %d left out", len(idx.Entries), len(m.Bytes), dropped)
}

// TestParseRefuses: anything but a well-formed index is refused whole.
func TestParseRefuses(t *testing.T) {
	good, _, err := Encode(entries(2, 2))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(*ocispec.Index)) []byte { return edited(t, good.Bytes, fn) }
	ann := func(i int, k, v string) []byte {
		return edit(func(idx *ocispec.Index) { idx.Manifests[i].Annotations[k] = v })
	}
	cases := map[string][]byte{
		"not JSON":             []byte("{"),
		"trailing data":        append(append([]byte{}, good.Bytes...), []byte(" {}")...),
		"unknown field":        []byte(strings.Replace(string(good.Bytes), `"schemaVersion"`, `"extra":1,"schemaVersion"`, 1)),
		"artifactType":         edit(func(idx *ocispec.Index) { idx.ArtifactType = "application/vnd.opentofu.provider" }),
		"mediaType":            edit(func(idx *ocispec.Index) { idx.MediaType = ocispec.MediaTypeImageManifest }),
		"schemaVersion":        edit(func(idx *ocispec.Index) { idx.SchemaVersion = 1 }),
		"duplicate":            edit(func(idx *ocispec.Index) { idx.Manifests[1] = idx.Manifests[0] }),
		"entry mediaType":      edit(func(idx *ocispec.Index) { idx.Manifests[0].MediaType = ocispec.MediaTypeImageManifest }),
		"bad digest":           edit(func(idx *ocispec.Index) { idx.Manifests[0].Digest = "sha256:abc" }),
		"sha512":               edit(func(idx *ocispec.Index) { idx.Manifests[0].Digest = digest.SHA512.FromString("x") }),
		"size 0":               edit(func(idx *ocispec.Index) { idx.Manifests[0].Size = 0 }),
		"size too large":       edit(func(idx *ocispec.Index) { idx.Manifests[0].Size = oci.MaxManifestSize + 1 }),
		"no version":           ann(0, AnnotationVersion, ""),
		"loose version":        ann(0, AnnotationVersion, "v1.0.0"),
		"short version":        ann(0, AnnotationVersion, "1.0"),
		"no platforms":         ann(0, AnnotationPlatforms, ""),
		"bad platform":         ann(0, AnnotationPlatforms, "linux_amd64,../x"),
		"unsorted platforms":   ann(0, AnnotationPlatforms, "linux_amd64,darwin_arm64"),
		"duplicate platforms":  ann(0, AnnotationPlatforms, "linux_amd64,linux_amd64"),
		"no protocols":         edit(func(idx *ocispec.Index) { delete(idx.Manifests[0].Annotations, oci.AnnotationProtocols) }),
		"beyond MaxSize":       append(append([]byte{}, good.Bytes[:len(good.Bytes)-1]...), []byte(`,"annotations":{"x":"`+strings.Repeat("x", MaxSize)+`"}}`)...),
		"too many platforms":   ann(0, AnnotationPlatforms, manyPlatforms(oci.MaxIndexEntries+1)),
		"too many entries (e)": tooManyEntries(t),
		"hint no digest":       ann(0, AnnotationProvenanceBlobs, "sha256:abc+10"),
		"hint sha512":          ann(0, AnnotationProvenanceBlobs, digest.SHA512.FromString("x").String()+"+10"),
		"hint no size":         ann(0, AnnotationProvenanceBlobs, digest.FromString("x").String()),
		"hint size 0":          ann(0, AnnotationProvenanceBlobs, digest.FromString("x").String()+"+0"),
		"hint size +1":         ann(0, AnnotationProvenanceBlobs, digest.FromString("x").String()+"++1"),
		"hint size 010":        ann(0, AnnotationProvenanceBlobs, digest.FromString("x").String()+"+010"),
		"hint too large":       ann(0, AnnotationProvenanceBlobs, fmt.Sprintf("%s+%d", digest.FromString("x"), oci.MaxSmallFile+1)),
		"hints unsorted":       ann(0, AnnotationProvenanceBlobs, formatBlobs([]ocispec.Descriptor{hints("1", 2)[1], hints("1", 2)[0]})),
		"hints duplicate":      ann(0, AnnotationProvenanceBlobs, formatBlobs([]ocispec.Descriptor{hints("1", 1)[0], hints("1", 1)[0]})),
		"too many hints":       ann(0, AnnotationProvenanceBlobs, formatBlobs(hints("1", oci.MaxProvenanceHints+1))),
		"hints empty item":     ann(0, AnnotationProvenanceBlobs, formatBlobs(hints("1", 1))+","),
	}
	for name, b := range cases {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Parse(good.Bytes); err != nil {
		t.Fatal(err)
	}
}

func manyPlatforms(n int) string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("os_a%04d", i))
	}
	return strings.Join(ps, ",")
}

// tooManyEntries is an index of MaxEntries+1 minimal entries.
func tooManyEntries(t *testing.T) []byte {
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactType}
	idx.SchemaVersion = 2
	for i := range MaxEntries + 1 {
		v := fmt.Sprintf("1.%d.%d", i/100, i%100)
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromString(v), Size: 1,
			Annotations: map[string]string{AnnotationVersion: v, AnnotationPlatforms: "a_b", oci.AnnotationProtocols: "5.0"}})
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseErrorsAreBounded: what a hostile index says is quoted in a
// refusal (logged by the proxy, printed by verify and lint) at most a
// few dozen bytes of it, however much the index holds.
func TestParseErrorsAreBounded(t *testing.T) {
	good, _, err := Encode(entries(2, 2))
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 1<<20)
	edit := func(fn func(*ocispec.Index)) []byte { return edited(t, good.Bytes, fn) }
	ann := func(k, v string) []byte {
		return edit(func(idx *ocispec.Index) { idx.Manifests[0].Annotations[k] = v })
	}
	cases := map[string][]byte{
		"unknown field":      []byte(strings.Replace(string(good.Bytes), `"schemaVersion"`, `"`+huge+`":1,"schemaVersion"`, 1)),
		"artifactType":       edit(func(idx *ocispec.Index) { idx.ArtifactType = huge }),
		"mediaType":          edit(func(idx *ocispec.Index) { idx.MediaType = huge }),
		"entry mediaType":    edit(func(idx *ocispec.Index) { idx.Manifests[0].MediaType = huge }),
		"digest":             edit(func(idx *ocispec.Index) { idx.Manifests[0].Digest = digest.Digest("sha256:" + huge) }),
		"version":            ann(AnnotationVersion, huge),
		"platform":           ann(AnnotationPlatforms, "linux_amd64,"+huge),
		"unsorted platforms": ann(AnnotationPlatforms, "z_z,"+longPlatforms(oci.MaxIndexEntries-1)),
		"deeply nested":      []byte(`{"annotations":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`),
		"nested manifests":   []byte(`{"manifests":[{"platform":{"features":` + strings.Repeat(`[`, 1<<20) + `}}]}`),
	}
	for name, b := range cases {
		_, err := Parse(b)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if n := len(err.Error()); n > 512 {
			t.Errorf("%s: the refusal is %d bytes: %.200s…", name, n, err)
		}
	}
}

// longPlatforms are n sorted platforms of the longest words allowed.
func longPlatforms(n int) string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("%s_%028d", strings.Repeat("a", 32), i))
	}
	return strings.Join(ps, ",")
}

// edited is the index body changed by fn.
func edited(t *testing.T, body []byte, fn func(*ocispec.Index)) []byte {
	t.Helper()
	var idx ocispec.Index
	if err := json.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	fn(&idx)
	b, _ := json.Marshal(idx)
	return b
}
