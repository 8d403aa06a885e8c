package oci

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// plainIndexSeeds are indexes plainIndex reads (image-spec's own marshalling,
// and the same with whitespace, an empty list and maps) and indexes it must
// leave to encoding/json (escapes, case-folded or unknown keys, numbers in
// other forms, nulls, duplicates, trailing data).
var plainIndexSeeds = []string{
	` { "schemaVersion" : 2 , "manifests" : [ ] , "annotations" : { } } `,
	`{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"platform":{},"annotations":{"a":""}},{}]}`,
	`{"mediaType":"application/vnd.oci.image.index.v1+json","MediaType":"x"}`,
	`{"mediaType":"application/vnd.oci.image.index.v1+json","mediaType":"x"}`,
	`{"mediaType":"\u0061"}`,
	`{"manifests":[{"size":1e3}]}`,
	`{"manifests":[{"size":-1}]}`,
	`{"manifests":[{"size":007}]}`,
	`{"manifests":[{"size":9223372036854775808}]}`,
	`{"manifests":null}`,
	`{"manifests":[{"urls":["https://x"]}]}`,
	`{"manifests":[{"platform":{"os.features":["x"]}}]}`,
	`{"subject":{"digest":"sha256:00"}}`,
	`{"schemaVersion":2}x`,
	`{"annotations":{"k":"v","k":"w"}}`,
	"{\"mediaType\":\"a\x7fb\"}",
	`[]`,
}

func plainSeed(t testing.TB) []byte {
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeProvider, Annotations: map[string]string{AnnotationProtocols: "5.0,6.0"}}
	idx.SchemaVersion = 2
	for i, p := range []ocispec.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "darwin", Architecture: "arm64", Variant: "v8"}, {OS: "windows", Architecture: "amd64", OSVersion: "10.0"}} {
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeProviderTarget,
			Digest: digest.FromString(p.OS + p.Architecture), Size: int64(100 * (i + 1)), Platform: &p})
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What plainIndex accepts, encoding/json decodes to the same value; and
// image-spec's own marshalling of a provider index is accepted (the plain
// path is the one real indexes take, not dead code).
func FuzzPlainIndexAgrees(f *testing.F) {
	f.Add(plainSeed(f))
	for _, s := range plainIndexSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast ocispec.Index
		if !plainIndex(b, &fast) {
			return
		}
		var std ocispec.Index
		if err := json.Unmarshal(b, &std); err != nil {
			t.Fatalf("plainIndex accepted what encoding/json refuses (%v): %q", err, b)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("plainIndex read %+v, encoding/json %+v: %q", fast, std, b)
		}
	})
}

func TestPlainIndexReadsPlainIndexesOnly(t *testing.T) {
	var idx ocispec.Index
	if !plainIndex(plainSeed(t), &idx) || len(idx.Manifests) != 3 || idx.Manifests[1].Platform.Variant != "v8" {
		t.Fatalf("image-spec's marshalling of a provider index not read plainly: %+v", idx)
	}
	for i, s := range plainIndexSeeds {
		want := i < 2
		if got := plainIndex([]byte(s), &ocispec.Index{}); got != want {
			t.Errorf("plainIndex(%s) = %v, want %v", s, got, want)
		}
	}
}
