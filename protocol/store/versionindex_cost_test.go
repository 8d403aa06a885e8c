package store

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// TestVersionIndexCostCoversItsMemory: the cost the resolve cache counts
// for a parsed version index covers the memory it holds, for an honest
// index (15 platforms a version) and for a hostile one packing the most
// short platforms into the 4 MiB bound: the cache's byte budget bounds
// what hostile indexes take.
func TestVersionIndexCostCoversItsMemory(t *testing.T) {
	var short []string
	for i := range oci.MaxIndexEntries {
		short = append(short, fmt.Sprintf("%c%c_a", 'a'+i/26, 'a'+i%26))
	}
	honest := []string{"darwin_amd64", "darwin_arm64", "freebsd_386", "freebsd_amd64", "freebsd_arm", "linux_386", "linux_amd64",
		"linux_arm", "linux_arm64", "openbsd_386", "openbsd_amd64", "solaris_amd64", "windows_386", "windows_amd64", "windows_arm64"}
	for name, c := range map[string]struct {
		platforms string
		hints     int
	}{
		"honest":                  {strings.Join(honest, ","), 5},
		"hostile":                 {strings.Join(short, ","), 0},
		"hostile, the most hints": {"a_b", oci.MaxProvenanceHints},
	} {
		t.Run(name, func(t *testing.T) {
			body := indexOf(t, c.platforms, c.hints)
			desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(body), Size: int64(len(body))}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			val, cost, err := parseVersionIndex(desc, body)
			runtime.GC()
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("a %d-byte index of %d entries holds %d bytes; its cost is %d", len(body), len(val.(*versionindex.Index).Entries), held, cost)
			if cost < held {
				t.Errorf("the cost %d is less than the %d bytes the parsed index holds", cost, held)
			}
			if cost > 3*held {
				t.Errorf("the cost %d is more than three times the %d bytes the parsed index holds", cost, held)
			}
			runtime.KeepAlive(val)
			runtime.KeepAlive(body)
		})
	}
}

// indexOf is a version index as large as the bounds allow, every entry
// listing platforms and that many provenance hints.
func indexOf(t *testing.T, platforms string, hints int) []byte {
	t.Helper()
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: versionindex.ArtifactType}
	idx.SchemaVersion = 2
	perEntry := len(platforms) + 400 + hints*80
	for i := 0; i < versionindex.MaxEntries && (i+1)*perEntry < versionindex.MaxSize; i++ {
		v := fmt.Sprintf("1.%d.%d", i/100, i%100)
		a := map[string]string{versionindex.AnnotationVersion: v, versionindex.AnnotationPlatforms: platforms,
			oci.AnnotationProtocols: "5.0,6.0", oci.AnnotationSigningKeys: "0123456789ABCDEF"}
		if hints > 0 {
			var hs []string
			for j := range hints {
				hs = append(hs, fmt.Sprintf("%s+%d", digest.FromString(fmt.Sprint(v, j)), 100+j))
			}
			slices.Sort(hs)
			a[versionindex.AnnotationProvenanceBlobs] = strings.Join(hs, ",")
		}
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromString(v), Size: 3000, Annotations: a})
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
