package oci

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sync"
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
