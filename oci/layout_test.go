package oci

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// layoutIndex reads a layout's index.json.
func layoutIndex(t *testing.T, dir string) ocispec.Index {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

// indexEntries reads a layout's index.json as ref name → digest; every
// entry must have a name of its own.
func indexEntries(t *testing.T, dir string) map[string]string {
	t.Helper()
	idx := layoutIndex(t, dir)
	out := map[string]string{}
	for _, m := range idx.Manifests {
		out[m.Annotations[ocispec.AnnotationRefName]] = m.Digest.String()
	}
	if len(out) != len(idx.Manifests) || out[""] != "" {
		t.Fatalf("index.json lists %d manifests under %d names: %v", len(idx.Manifests), len(out), out)
	}
	return out
}

// Layouts name their tagged roots only, child manifests are still read by
// digest, and a layout written the old way (every manifest listed) is
// tidied on its next tag.
func TestLayoutIndexNamesTaggedRoots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "a"), zipPkg("darwin", "arm64", "b")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The old way: oras-go's store lists every manifest.
	old, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Push(ctx, old, a, Tags{"1.0.0": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(layoutIndex(t, dir).Manifests); n != 3 {
		t.Fatalf("oras-go's store lists %d manifests; the test expects the index and its two children", n)
	}

	c, err := NewClient(Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", "c")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Push(ctx, repo, b, Tags{"1.1.0": "", "latest": ""}, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"1.0.0": a.Root().Digest.String(), "1.1.0": b.Root().Digest.String(), "latest": b.Root().Digest.String()}
	if got := indexEntries(t, dir); len(got) != len(want) || got["1.0.0"] != want["1.0.0"] || got["1.1.0"] != want["1.1.0"] || got["latest"] != want["latest"] {
		t.Fatalf("index.json: %v, want %v", got, want)
	}

	ro, err := c.OpenReadOnly(ctx, Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pv, err := ResolveProvider(ctx, ro, names.MustParseVersion(v))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		for p, m := range pv.Platforms {
			if _, err := ReadProviderPackage(ctx, ro, m); err != nil {
				t.Errorf("%s %s: %v", v, p, err)
			}
			if _, body, err := FetchReference(ctx, ro, m.Digest.String()); err != nil || len(body) != int(m.Size) {
				t.Errorf("%s %s by digest: %v", v, p, err)
			}
		}
	}
}
