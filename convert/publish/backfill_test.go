package publish_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Backfill stores the SBOMs a version pushed without them lacks, each
// attested, a line logged for each; a second run finds them present; a
// version that is not there is a failed result, and the others go on.
func TestBackfill(t *testing.T) {
	ctx := context.Background()
	repo := newWatched(t)
	if _, err, _ := publish.PushProvider(ctx, seed.Hello(t), publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: helloRef}, NoSBOM: true}); err != nil {
		t.Fatal(err)
	}
	key := &publish.KeyAttester{Signer: attesttest.Signer(t), Version: "test"}
	missing := names.MustParseVersion("9.9.9")
	targets := []publish.BackfillTarget{{Ref: helloRef, Version: &missing}, {Ref: helloRef}}
	for run, want := range []release.SBOMStatus{release.SBOMWritten, release.SBOMPresent} {
		var lines []string
		opts := publish.BackfillOptions{
			Open:   func(oci.Reference) (oci.Repository, error) { return repo, nil },
			Attest: key,
			Log:    func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) },
		}
		b, err := publish.Backfill(ctx, targets, opts)
		if err != nil {
			t.Fatal(err)
		}
		if b.Count(want) != 4 || b.Count(release.SBOMFailed) != 1 || len(b.Results) != 5 {
			t.Fatalf("run %d: %+v", run, b.Results)
		}
		if r := b.Results[0]; r.Version != "9.9.9" || r.Platform != "" || r.Status != "error" {
			t.Errorf("run %d: the missing version: %+v", run, r)
		}
		if len(lines) != 5 || !strings.HasPrefix(lines[1], fmt.Sprintf("%-13s %s 1.0.0 ", want, helloRef.Name())) {
			t.Errorf("run %d: logged %q", run, lines)
		}
	}
	pv, err := oci.ResolveProvider(ctx, repo, names.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	for p, d := range pv.Platforms {
		if ok, err := attest.AttestationComplete(ctx, repo, d.Digest, key.Key(), sbom.SPDXPredicateType); !ok || err != nil {
			t.Errorf("%s: the backfilled SBOM is not attested: %v", p, err)
		}
	}
}
