package oci

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fetchCounting counts the fetches of each digest.
type fetchCounting struct {
	ReadOnlyRepository
	mu      sync.Mutex
	fetches map[digest.Digest]int
}

func (f *fetchCounting) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	f.mu.Lock()
	f.fetches[desc.Digest]++
	f.mu.Unlock()
	return f.ReadOnlyRepository.Fetch(ctx, desc)
}

func (f *fetchCounting) counts() (total, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.fetches {
		total, most = total+n, max(most, n)
	}
	return total, most
}

// TestReadProvenanceHinted: hints that are right are fetched once each,
// beside the manifest; hints that are wrong (another provenance's blobs,
// a right digest with a wrong size, blobs not held, too many) never
// change what is read, and cost at most MaxProvenanceHints fetches more.
func TestReadProvenanceHinted(t *testing.T) {
	ctx := context.Background()
	repo := newLayout(t)
	provenance := func(v string) (ocispec.Descriptor, ocispec.Manifest) {
		prov, err := BuildProvenance(Provenance{Type: "x", Version: v, Protocols: []string{"6.0"}, Platforms: map[string]ProvenancePlatform{"linux_amd64": {Filename: "f.zip", H1: "h1:" + v}}},
			ProvenanceFiles{SHA256SUMS: NamedBytes{Name: "SUMS", Data: []byte("sums " + v)}, Signature: NamedBytes{Name: "SUMS.sig", Data: []byte("sig " + v)},
				Keys: NamedBytes{Name: "keys", Data: []byte("keys " + v)}})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "zip-"+v)}, prov)
		if _, err := Push(ctx, repo, a, Tags{v: ""}, PushOptions{}); err != nil {
			t.Fatal(err)
		}
		pv, err := ResolveProvider(ctx, repo, names.MustParseVersion(v))
		if err != nil {
			t.Fatal(err)
		}
		m, err := FetchImageManifest(ctx, repo, *pv.Provenance)
		if err != nil {
			t.Fatal(err)
		}
		return *pv.Provenance, m
	}
	desc, m := provenance("1.0.0")
	_, other := provenance("2.0.0")
	wantMeta, wantFiles, err := ReadProvenance(ctx, repo, desc)
	if err != nil {
		t.Fatal(err)
	}
	right := ProvenanceBlobs(m)
	if len(right) != 4 {
		t.Fatalf("hints %v, want the config and three files", right)
	}
	wrongSizes := append([]ocispec.Descriptor(nil), right...)
	for i := range wrongSizes {
		wrongSizes[i].Size++
	}
	var many []ocispec.Descriptor
	for i := range 3 * MaxProvenanceHints {
		many = append(many, ocispec.Descriptor{Digest: digest.FromString(fmt.Sprint(i)), Size: 10})
	}
	for name, tc := range map[string]struct {
		hints     []ocispec.Descriptor
		extraMost int // fetches beyond the manifest and its blobs, once each
	}{
		"none":                     {nil, 0},
		"right":                    {right, 0},
		"another provenance's":     {ProvenanceBlobs(other), len(ProvenanceBlobs(other))},
		"right digests wrong size": {wrongSizes, len(wrongSizes)},
		"not held, too many":       {many, MaxProvenanceHints},
	} {
		t.Run(name, func(t *testing.T) {
			counting := &fetchCounting{ReadOnlyRepository: repo, fetches: map[digest.Digest]int{}}
			meta, files, err := ReadProvenanceHinted(ctx, counting, desc, tc.hints)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(meta, wantMeta) || !reflect.DeepEqual(files, wantFiles) {
				t.Fatalf("read %+v %+v, want %+v %+v", meta, files, wantMeta, wantFiles)
			}
			total, most := counting.counts()
			if want := 1 + len(right) + tc.extraMost; total > want || (tc.extraMost == 0 && most > 1) {
				t.Errorf("%d fetches (at most %d of one digest), want at most %d: %v", total, most, want, counting.fetches)
			}
		})
	}
}

// byteCounting counts the bytes read of the blobs fetched.
type byteCounting struct {
	ReadOnlyRepository
	read atomic.Int64
}

func (b *byteCounting) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := b.ReadOnlyRepository.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	return countedReader{rc, &b.read}, nil
}

type countedReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countedReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestProvenanceHintsBoundedInBytes: hints naming the largest blobs an
// index may name (MaxProvenanceHints of MaxSmallFile bytes each, held by
// the repository) cost at most MaxProvenanceHintBytes more read than the
// provenance itself, not MaxProvenanceHints times MaxSmallFile; small
// hints that are right are all still fetched early.
func TestProvenanceHintsBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	repo := newLayout(t)
	desc, m := pushedProvenance(t, repo)
	var own int64 = desc.Size
	for _, b := range ProvenanceBlobs(m) {
		own += b.Size
	}
	var large []ocispec.Descriptor
	for i := range MaxProvenanceHints {
		data := bytes.Repeat([]byte{byte('a' + i)}, MaxSmallFile)
		desc := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(data), Size: int64(len(data))}
		if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		large = append(large, ocispec.Descriptor{Digest: desc.Digest, Size: desc.Size})
	}
	counting := &byteCounting{ReadOnlyRepository: repo}
	if _, _, err := ReadProvenanceHinted(ctx, counting, desc, large); err != nil {
		t.Fatal(err)
	}
	if extra := counting.read.Load() - own; extra > MaxProvenanceHintBytes {
		t.Errorf("hints of %d blobs of %d bytes had %d bytes read beyond the provenance's %d, want at most %d",
			len(large), MaxSmallFile, extra, own, MaxProvenanceHintBytes)
	}

	fetches := &fetchCounting{ReadOnlyRepository: repo, fetches: map[digest.Digest]int{}}
	mixed := append(ProvenanceBlobs(m), large...) // sorted by digest, as an index lists them
	slices.SortFunc(mixed, func(a, b ocispec.Descriptor) int { return strings.Compare(string(a.Digest), string(b.Digest)) })
	if _, _, err := ReadProvenanceHinted(ctx, fetches, desc, mixed); err != nil {
		t.Fatal(err)
	}
	for _, b := range ProvenanceBlobs(m) {
		if fetches.fetches[b.Digest] != 1 {
			t.Errorf("the provenance's blob %s was fetched %d times beside large hints, want once", b.Digest, fetches.fetches[b.Digest])
		}
	}
}

// TestReadProvenanceOddHints: hints no index would hold (other digest
// algorithms, malformed digests, sizes of zero, negative or beyond any
// bound, one digest twice with two sizes, the manifest's own digest) are
// no error and no panic: the read is what it is without hints.
func TestReadProvenanceOddHints(t *testing.T) {
	ctx := context.Background()
	repo := newLayout(t)
	desc, m := pushedProvenance(t, repo)
	wantMeta, wantFiles, err := ReadProvenance(ctx, repo, desc)
	if err != nil {
		t.Fatal(err)
	}
	right := ProvenanceBlobs(m)
	for name, hints := range map[string][]ocispec.Descriptor{
		"sha512":              {{Digest: digest.SHA512.FromString("x"), Size: 1}},
		"malformed":           {{Digest: "sha256:xyz", Size: 1}, {Digest: "", Size: 1}, {Digest: "md5:0", Size: 1}},
		"size zero":           {{Digest: right[0].Digest, Size: 0}},
		"size negative":       {{Digest: right[0].Digest, Size: -1}, {Digest: right[1].Digest, Size: -MaxSmallFile * 8}},
		"size beyond bounds":  {{Digest: right[0].Digest, Size: 1 << 62}},
		"one digest twice":    {{Digest: right[0].Digest, Size: right[0].Size + 1}, right[0]},
		"the manifest itself": {{Digest: desc.Digest, Size: desc.Size}},
	} {
		t.Run(name, func(t *testing.T) {
			meta, files, err := ReadProvenanceHinted(ctx, repo, desc, hints)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(meta, wantMeta) || !reflect.DeepEqual(files, wantFiles) {
				t.Fatalf("read %+v %+v, want %+v %+v", meta, files, wantMeta, wantFiles)
			}
		})
	}
}

// pushedProvenance pushes version 1.0.0 of a provider with a provenance
// of SHA256SUMS and its signature to repo: the provenance manifest's
// descriptor and the manifest.
func pushedProvenance(t *testing.T, repo Repository) (ocispec.Descriptor, ocispec.Manifest) {
	t.Helper()
	ctx := context.Background()
	prov, err := BuildProvenance(Provenance{Type: "x", Version: "1.0.0", Protocols: []string{"6.0"}, Platforms: map[string]ProvenancePlatform{"linux_amd64": {Filename: "f.zip", H1: "h1:x"}}},
		ProvenanceFiles{SHA256SUMS: NamedBytes{Name: "SUMS", Data: []byte("sums")}, Signature: NamedBytes{Name: "SUMS.sig", Data: []byte("sig")}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "zip")}, prov)
	if _, err := Push(ctx, repo, a, Tags{"1.0.0": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	pv, err := ResolveProvider(ctx, repo, names.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := FetchImageManifest(ctx, repo, *pv.Provenance)
	if err != nil {
		t.Fatal(err)
	}
	return *pv.Provenance, m
}
