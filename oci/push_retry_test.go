package oci_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
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
