package held_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// served is what a cold store serves of version v's packages and
// checksums, resolved as a <version>.json is (the version index read
// beside the tag): the publisher's files and every package's hashes.
func (ix *indexed) served(t *testing.T, v string) string {
	t.Helper()
	g, h := ix.source(t)
	return servedBy(t, g, h, ix.p, v)
}

// describe is what rel serves: the publisher's files and every package's
// hashes.
func describe(rel *source.ProviderRelease) string {
	out := fmt.Sprintf("sums %s\nsig %x\nkeys %v\n", rel.Checksums.Data, digest.FromBytes(rel.Checksums.Signature), rel.Checksums.Keys)
	for _, pl := range rel.Platforms {
		out += fmt.Sprintf("%s %v\n", pl, rel.Packages[pl].Hashes)
	}
	return out
}

// TestProvenanceHints: a push writes each entry's provenance hints, and
// hints that lie (another version's files, blobs the registry does not
// hold, too many, a wrong size) never change what is served for a
// version: a hinted blob is used only when the version's own provenance
// manifest names it.
func TestProvenanceHints(t *testing.T) {
	ix := newIndexed(t, 3)
	honest := ix.entries(t)
	v0, v1 := seed.Version(0), seed.Version(1)
	for _, e := range honest {
		if len(e.ProvenanceBlobs) < 4 { // config, SHA256SUMS, signature, keys
			t.Fatalf("entry %s has hints %v, want the provenance's config and files", e.Version, e.ProvenanceBlobs)
		}
	}
	withHints := func(t *testing.T, v string, hints []ocispec.Descriptor) {
		t.Helper()
		e := maps.Clone(honest)
		entry := e[v]
		entry.ProvenanceBlobs = hints
		e[v] = entry
		if _, _, err := versionindex.Write(context.Background(), ix.repo, e); err != nil {
			t.Fatal(err)
		}
	}
	withHints(t, v1, nil)
	want := ix.served(t, v1) // read as without hints
	withHints(t, v1, honest[v1].ProvenanceBlobs)
	if got := ix.served(t, v1); got != want {
		t.Fatalf("with its own hints %s serves\n%s\nwant\n%s", v1, got, want)
	}
	missing := digest.FromString("no such blob")
	for name, hints := range map[string][]ocispec.Descriptor{
		"another version's files": honest[v0].ProvenanceBlobs,
		"blobs not held":          {{Digest: missing, Size: 10}},
		"right digests, wrong sizes": func() []ocispec.Descriptor {
			out := append([]ocispec.Descriptor(nil), honest[v1].ProvenanceBlobs...)
			for i := range out {
				out[i].Size++
			}
			return out
		}(),
		"half right": append(append([]ocispec.Descriptor(nil), honest[v1].ProvenanceBlobs[:2]...), honest[v0].ProvenanceBlobs[2:]...),
	} {
		t.Run(name, func(t *testing.T) {
			withHints(t, v1, sortedHints(hints))
			if got := ix.served(t, v1); got != want {
				t.Errorf("%s serves\n%s\nwant\n%s", v1, got, want)
			}
		})
	}
}

// sortedHints are hints sorted and distinct, as an index must list them.
func sortedHints(hints []ocispec.Descriptor) []ocispec.Descriptor {
	byDigest := map[digest.Digest]ocispec.Descriptor{}
	for _, h := range hints {
		byDigest[h.Digest] = h
	}
	out := make([]ocispec.Descriptor, 0, len(byDigest))
	for _, d := range slices.Sorted(maps.Keys(byDigest)) {
		out = append(out, byDigest[d])
	}
	return out
}
