package gate_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Explain asks what the gate asks, in the open: a mapping that does not
// hold the version is passed over; of the release the next holds, the
// attestation rule (when attested) and the facts the rule reads, by the
// judge's clock, each say their word; nothing is observed. A version no
// mapping holds is denied when its rule needs what the registry holds.
func TestExplainAsksWhatTheGateAsks(t *testing.T) {
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
	admitted := 0
	st := store.New(store.Options{})
	judge := &gate.Policy{Live: policy.NewLive(pol), Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler),
		Trusted: attest.IngestTrust{Keys: []*attest.Verifier{key}}, Each: st.Each,
		Admitted: func(_ context.Context, kind names.Kind, r source.Root) error {
			admitted++
			return &store.Refusal{Kind: kind, Subject: r.Digest, Reason: gate.NotAttested}
		},
		Observe: func(d source.Decision) { t.Errorf("observed %+v", d) }}
	notHeld := gate.Held{Root: func(context.Context, names.Version) (*source.Root, error) {
		return nil, source.MarkNotHeld(source.NotFoundf("not here"))
	}}
	holds := gate.Held{Root: func(_ context.Context, v names.Version) (*source.Root, error) {
		if v.String() != "1.9.0" {
			return nil, source.MarkNotHeld(source.NotFoundf("not here"))
		}
		return &root, nil
	}}
	mappings := func() ([]gate.Held, error) { return []gate.Held{notHeld, holds}, nil }
	explain := func(version string, attested bool) gate.Verdict {
		t.Helper()
		vs, err := judge.Explain(context.Background(), names.KindTofu, "tofu", version, attested, mappings)
		if err != nil || len(vs) != 1 || vs[0].Version != version {
			t.Fatalf("%s: %+v, %v", version, vs, err)
		}
		return vs[0]
	}

	v := explain("1.9.0", true)
	if !v.Held || v.Allow || v.Rule != "cool-down" || !strings.Contains(v.Reason, "younger than min_age") || v.AgesIn.IsZero() {
		t.Errorf("at t0+1h: %+v, want a cool-down denial on the facts", v)
	}
	if v.Admission == nil || v.Admission.Admitted || v.Admission.Reason != gate.NotAttested || admitted != 1 || v.Served() {
		t.Errorf("at t0+1h: admission %+v (asked %d times), want the rule's refusal", v.Admission, admitted)
	}
	now = t0.Add(73 * time.Hour)
	if v := explain("1.9.0", false); !v.Held || !v.Allow || v.Admission != nil || !v.Served() || admitted != 1 {
		t.Errorf("at t0+73h, not attested: %+v (asked %d times), want served, the rule not asked", v, admitted)
	}
	if v := explain("2.0.0", true); v.Held || v.Allow || !strings.Contains(v.Reason, "the registry holds no such version") || v.Admission != nil {
		t.Errorf("a version not held: %+v", v)
	}

	none := &gate.Policy{Live: policy.NewLive(nil)}
	if _, err := none.Explain(context.Background(), names.KindTofu, "tofu", "1.9.0", true, func() ([]gate.Held, error) {
		t.Error("mappings asked for without a policy")
		return nil, nil
	}); err == nil {
		t.Error("no policy: no error")
	}
	unmapped := errors.New("unmapped")
	if _, err := judge.Explain(context.Background(), names.KindTofu, "tofu", "1.9.0", true, func() ([]gate.Held, error) { return nil, unmapped }); !errors.Is(err, unmapped) {
		t.Errorf("the mappings' error: %v", err)
	}
}
