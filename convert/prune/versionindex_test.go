package prune_test

import (
	"context"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/prune"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// TestApplyRewritesTheVersionIndex: after prune deletes versions, the
// repository's version index names none of them (it no longer pins
// their manifests, and verify and lint find it agreeing with the tags).
func TestApplyRewritesTheVersionIndex(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ref := oci.Reference{Registry: reg.Host, Repository: "providers/acme/big"}
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.Provider(ctx, repo, t.TempDir(), seed.Options{Versions: 4, Signer: signer, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	targets := []prune.Target{{Ref: ref}}
	plans, _, err := prune.PlanTargets(ctx, client, targets, prune.Rules{KeepNewest: 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := plans[0].Total(); n != 3 {
		t.Fatalf("the plan lets %d versions go, want 3", n)
	}
	if err := prune.ApplyPlans(ctx, client, targets, plans); err != nil {
		t.Fatal(err)
	}
	if note := plans[0].IndexNote; note != "" {
		t.Errorf("the index note: %s", note)
	}
	c, err := versionindex.Verify(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Agrees() || c.Entries != 1 {
		t.Fatalf("after prune the index check says %+v; want one entry agreeing", c)
	}
	idx, err := versionindex.Read(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	newest := seed.Version(3)
	if _, ok := idx.Entries[newest]; !ok || len(idx.Entries) != 1 {
		t.Fatalf("the index lists %v, want %s alone", keys(idx.Entries), newest)
	}
	if vs, err := oci.ListVersions(ctx, repo); err != nil || len(vs) != 1 || !vs[0].Same(names.MustParseVersion(newest)) {
		t.Fatalf("versions after prune: %v, %v", vs, err)
	}
}

func keys(m map[string]versionindex.Entry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
