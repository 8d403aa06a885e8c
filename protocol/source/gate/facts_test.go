package gate_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"oras.land/oras-go/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// attestedRoot is a root in an OCI layout attested by a new key as
// `push tofu --attest-key` does, verified (ingested) at at; it returns
// the root and the key.
func attestedRoot(t *testing.T, at time.Time) (source.Root, *attest.Verifier) {
	t.Helper()
	ctx := context.Background()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := oci.Reference{Layout: true, Repository: t.TempDir() + "/tofu"}
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	root, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.oci-tofu.test-artifact", oras.PackManifestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	signer := attesttest.Signer(t)
	pred := map[string]string{"verified_at": at.UTC().Format(time.RFC3339)}
	if _, err := attest.Attach(ctx, repo, "example.com/tofu", root.Digest, signer, pubrelease.TofuPredicateType, pred); err != nil {
		t.Fatal(err)
	}
	st := store.New(store.Options{Client: client})
	return source.Root{Repo: st.Repo(ref), Digest: root.Digest}, signer.Public()
}

// A min_age denial is made by the judge's clock on the ingest time a
// trusted attestation records: it says when the release ages in, notes
// that time for the document being built (source.NoteDecidedUntil), and
// is observed once, as made on facts; once the clock passes that time
// the same release is allowed.
func TestMinAgeNotesWhenItAgesIn(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	root, key := attestedRoot(t, t0)
	pol, err := policy.Parse([]byte(`tofu {
  name    = "cool-down"
  min_age = "3d"
}`), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	var mu sync.Mutex
	var observed []source.Decision
	st := store.New(store.Options{})
	judge := &gate.Policy{Live: policy.NewLive(pol), Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler),
		Trusted: attest.IngestTrust{Keys: []*attest.Verifier{key}}, Each: st.Each,
		Observe: func(d source.Decision) { mu.Lock(); defer mu.Unlock(); observed = append(observed, d) }}
	v, err := names.ParseVersion("1.9.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := judge.Version(names.KindTofu, "tofu", "OpenTofu", v); err != nil || len(observed) != 0 {
		t.Fatalf("version check: %v, observed %v; want allowed, left to the facts", err, observed)
	}

	ctx, dec := source.WithDecisions(context.Background())
	_, err = judge.Facts(ctx, names.KindTofu, "tofu", "OpenTofu", v, root)
	agesIn := t0.Add(72 * time.Hour)
	var d *source.Denied
	if !errors.As(err, &d) || d.Rule != "cool-down" || !d.AgesIn.Equal(agesIn) ||
		!strings.HasPrefix(d.Msg, "OpenTofu 1.9.0 is not served: ") || !strings.Contains(d.Msg, "younger than min_age") {
		t.Fatalf("facts at t0+1h: %#v, want a cool-down denial aging in at %s", err, agesIn)
	}
	if got := dec.Until(); !got.Equal(agesIn) {
		t.Errorf("the document's decisions hold until %s, want %s", got, agesIn)
	}
	if len(observed) != 1 || observed[0].Allow || !observed[0].FromFacts || observed[0].Rule != "cool-down" ||
		observed[0].Version == nil || observed[0].Version.String() != "1.9.0" || observed[0].Policy != pol {
		t.Errorf("observed %+v, want one denial on facts", observed)
	}

	now = agesIn
	observed = nil
	ctx, dec = source.WithDecisions(context.Background())
	if _, err := judge.Facts(ctx, names.KindTofu, "tofu", "OpenTofu", v, root); err != nil {
		t.Errorf("facts once aged in: %v", err)
	}
	if !dec.Until().IsZero() {
		t.Errorf("an allowing decision holds until %s", dec.Until())
	}
	if len(observed) != 1 || !observed[0].Allow || !observed[0].FromFacts {
		t.Errorf("observed %+v, want one allowing decision on facts", observed)
	}
}

// The attestation rule is asked only when attested and configured; its
// refusal is a denial naming the rule, with the store's reason.
func TestAttestedAsksTheRule(t *testing.T) {
	v, err := names.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	root := source.Root{Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}
	asked := 0
	judge := &gate.Policy{Admitted: func(ctx context.Context, kind names.Kind, r source.Root) error {
		asked++
		return &store.Refusal{Kind: kind, Subject: r.Digest, Reason: gate.NotAttested}
	}}
	if err := judge.Attested(context.Background(), names.KindModule, "module acme/net/aws", v, root, false); err != nil || asked != 0 {
		t.Errorf("not attested: %v, asked %d times", err, asked)
	}
	err = judge.Attested(context.Background(), names.KindModule, "module acme/net/aws", v, root, true)
	var d *source.Denied
	if !errors.As(err, &d) || d.Rule != source.AttestationRule || d.Msg != "module acme/net/aws 1.0.0 is not served: "+gate.NotAttested {
		t.Errorf("refused: %#v", err)
	}
	if (&gate.Policy{}).ReadsRoot(names.KindModule, "example.com/acme/net/aws", true) || !judge.ReadsRoot(names.KindModule, "example.com/acme/net/aws", true) {
		t.Error("ReadsRoot does not follow whether an attestation rule is configured")
	}
}
