package oci_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// matchManifestPUT matches manifest writes.
func matchManifestPUT(r *http.Request) bool {
	return r.Method == http.MethodPut && testenv.MatchManifests(r)
}

// A registry that answers a manifest write with MANIFEST_BLOB_UNKNOWN
// although the push wrote the blob (Distribution does when two pushes of
// one release finish together) gets the blobs checked and the manifest
// written again; one that keeps answering so fails the push, with no tag.
func TestPushWritesAManifestAgainWhenItsBlobsWereUnknown(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	unknown := testenv.ErrorAnswer(http.StatusBadRequest, "MANIFEST_BLOB_UNKNOWN", "blob unknown to registry")
	for _, c2 := range []struct {
		name   string
		first  int
		wantOK bool
	}{
		{"once", 1, true},
		{"always", 1000, false},
	} {
		t.Run(c2.name, func(t *testing.T) {
			front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchManifestPUT, First: c2.first, Fault: unknown}}})
			repo, err := c.Open(oci.Reference{Registry: front.Host, Repository: "p/" + c2.name})
			if err != nil {
				t.Fatal(err)
			}
			a := seed.SmallArtifact(t, c2.name)
			_, err = oci.Push(ctx, repo, a, oci.Tags{"1.0.0": ""}, oci.PushOptions{})
			if (err == nil) != c2.wantOK {
				t.Fatalf("push: %v, want success %v", err, c2.wantOK)
			}
			direct, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/" + c2.name})
			if err != nil {
				t.Fatal(err)
			}
			tags, err := oci.ListTags(ctx, direct)
			if c2.wantOK && (err != nil || len(tags) != 1 || tags[0] != "1.0.0") {
				t.Errorf("tags after the push: %v %v, want [1.0.0]", tags, err)
			}
			if !c2.wantOK && len(tags) != 0 {
				t.Errorf("tags after the failed push: %v, want none", tags)
			}
		})
	}
}

// A Fresh push writes without asking first: no HEAD before a blob or a
// manifest; a Held blob is neither asked about nor written, and where the
// registry lacks it after all, its refusal of the manifest gets it
// written; content the registry holds already is taken again. An OCI
// layout, which refuses no manifest, gets the Held blob written.
func TestFreshPushAsksNothingFirst(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	a := seed.SmallArtifact(t, "fresh") // a layer and the empty config
	config := a.Blobs[1].Descriptor
	if config.Digest != ocispec.DescriptorEmptyJSON.Digest {
		t.Fatalf("the test wants the empty config second, got %s", config.Digest)
	}
	fresh := oci.PushOptions{Fresh: true, Held: []digest.Digest{config.Digest}}
	for _, round := range []string{"the config missing", "everything there already"} {
		repo, err := c.Open(oci.Reference{Registry: front.Host, Repository: "p/fresh"})
		if err != nil {
			t.Fatal(err)
		}
		front.ResetLog()
		if _, err := oci.Push(ctx, repo, a, oci.Tags{}, fresh); err != nil {
			t.Fatalf("%s: %v", round, err)
		}
		var heads, manifestPUTs int
		for _, e := range front.Log() {
			switch {
			case e.Method == http.MethodPut && strings.Contains(e.Path, "/manifests/"):
				manifestPUTs++
			case e.Method == http.MethodHead && manifestPUTs == 0: // after a refusal, the blobs are checked
				heads++
			}
		}
		if heads != 0 {
			t.Errorf("%s: %d HEAD requests before writing, want none: %v", round, heads, front.Log())
		}
		if round == "the config missing" && manifestPUTs != 2 {
			t.Errorf("%s: %d manifest writes, want 2 (refused for the config, then written)", round, manifestPUTs)
		}
		if round == "everything there already" && manifestPUTs != 1 {
			t.Errorf("%s: %d manifest writes, want 1", round, manifestPUTs)
		}
		direct, err := c.OpenReadOnly(ctx, oci.Reference{Registry: reg.Host, Repository: "p/fresh"})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range a.Blobs {
			if ok, err := direct.Exists(ctx, b.Descriptor); !ok || err != nil {
				t.Errorf("%s: blob %s in the registry: %v %v", round, b.Descriptor.Digest, ok, err)
			}
		}
	}

	dir := t.TempDir()
	layout, err := c.Open(oci.Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, layout, a, oci.Tags{}, fresh); err != nil {
		t.Fatal(err)
	}
	if ok, err := layout.Exists(ctx, config); !ok || err != nil {
		t.Errorf("the layout lacks the Held config: %v %v", ok, err)
	}
}
