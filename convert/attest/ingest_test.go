package attest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

// ingestBundle is a cosign v3 bundle of an attestation about about by s,
// recording verified_at at.
func ingestBundle(t *testing.T, s *Signer, about digest.Digest, predicateType string, at time.Time) []byte {
	t.Helper()
	env, err := sealStatement(s, Statement{
		Type:          statementTypeV01,
		Subject:       []Subject{{Name: "r", Digest: map[string]string{"sha256": about.Encoded()}}},
		PredicateType: predicateType, Predicate: json.RawMessage(`{"verified_at":"` + at.UTC().Format(time.RFC3339) + `"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "dsseEnvelope": json.RawMessage(env)})
	return b
}

// bundleBy is a BundleVerifier trusting the bundles whose envelope the
// key of s signed: the seam convert/keyless fills with keyless identities.
type bundleBy struct{ v *Verifier }

func (b bundleBy) VerifyBundle(raw []byte, subject digest.Digest, predicateType string) (*Statement, error) {
	var m struct{ DSSEEnvelope envelope }
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	st, err := openEnvelope(b.v, m.DSSEEnvelope)
	if err != nil || !st.covers(subject) || st.PredicateType != predicateType {
		return nil, errors.New("not this verifier's attestation")
	}
	return st, nil
}

// The ingest time is the earliest any trusted signer records, in a bundle
// referrer or an .att tag alike; attestations by others, about another
// subject or of another predicate type count for nothing, however early.
func TestEarliestIngest(t *testing.T) {
	ctx := context.Background()
	ours, viaBundles, theirs := ecdsaSigner(t), ecdsaSigner(t), ecdsaSigner(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	repo := layout(t)
	root := pushRoot(t, repo)
	if _, err := Attach(ctx, repo, "example.com/r", root, ours, testPredicateType, map[string]string{"verified_at": t0.Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	trust := IngestTrust{Keys: []*Verifier{ours.Public()}}
	if got, err := EarliestIngest(ctx, repo, root, trust, testPredicateType); err != nil || !got.Equal(t0) {
		t.Fatalf(".att alone: %v, %v; want %v", got, err, t0)
	}
	referBundle(t, repo, root, ingestBundle(t, ours, root, testPredicateType, t0.Add(-2*time.Hour)), 0)
	referBundle(t, repo, root, ingestBundle(t, viaBundles, root, testPredicateType, t0.Add(-3*time.Hour)), 0)
	referBundle(t, repo, root, ingestBundle(t, theirs, root, testPredicateType, t0.Add(-1000*time.Hour)), 0)
	referBundle(t, repo, root, ingestBundle(t, ours, digest.FromString("another"), testPredicateType, t0.Add(-1000*time.Hour)), 0)
	referBundle(t, repo, root, ingestBundle(t, ours, root, CosignSignPredicateType, t0.Add(-1000*time.Hour)), 0)
	for _, c := range []struct {
		name  string
		trust IngestTrust
		want  time.Time
	}{
		{"our key", trust, t0.Add(-2 * time.Hour)},
		{"our key and a bundle verifier", IngestTrust{Keys: trust.Keys, Bundles: []BundleVerifier{bundleBy{viaBundles.Public()}}}, t0.Add(-3 * time.Hour)},
		{"a bundle verifier alone", IngestTrust{Bundles: []BundleVerifier{bundleBy{viaBundles.Public()}}}, t0.Add(-3 * time.Hour)},
		{"nobody", IngestTrust{}, time.Time{}},
		{"an unused key", IngestTrust{Keys: []*Verifier{ecdsaSigner(t).Public()}}, time.Time{}},
	} {
		got, err := EarliestIngest(ctx, repo, root, c.trust, testPredicateType)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
