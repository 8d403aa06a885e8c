package attach_test

import (
	"context"
	"fmt"
	"testing"

	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// ListReferrers lists a subject's referrers of every type, in an OCI
// layout and in Distribution, keeping the first asked for and counting
// the rest; another subject's are not counted; an absent cosign
// attachment lists nothing.
func TestListReferrers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/listed"})
	if err != nil {
		t.Fatal(err)
	}
	subj, other := seed.SmallArtifact(t, "a"), seed.SmallArtifact(t, "b")
	arts := []*oci.Artifact{subj, other, referrerArtifact(t, other.Root(), "application/vnd.example.b", "of b")}
	types := []string{attach.ArtifactTypeSigstoreBundle, attach.ArtifactTypeNotationSignature, "application/vnd.example.x", "application/vnd.example.y", "application/vnd.example.z"}
	for i, at := range types {
		arts = append(arts, referrerArtifact(t, subj.Root(), at, fmt.Sprint("of a ", i)))
	}
	for _, a := range arts {
		for _, target := range []oci.Repository{store, remote} {
			if _, err := oci.Push(ctx, target, a, oci.Tags{}, oci.PushOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	layout, err := c.OpenReadOnly(ctx, oci.Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	for name, repo := range map[string]oci.ReadOnlyRepository{"layout": layout, "registry": remote} {
		l, err := attach.ListReferrers(ctx, repo, subj.Root().Digest, 3)
		if err != nil || len(l.First) != 3 || l.Total != len(types) || l.More {
			t.Fatalf("%s: %+v %v", name, l, err)
		}
		for _, d := range l.First {
			if d.ArtifactType == "" || d.ArtifactType == "application/vnd.example.b" {
				t.Errorf("%s lists %+v", name, d)
			}
		}
		layers, n, err := attach.ListAttachment(ctx, repo, subj.Root().Digest, attach.CosignAttestations)
		if err != nil || layers != nil || n != 0 {
			t.Errorf("%s: no .att tag, listed %v %v", name, layers, err)
		}
	}
}
