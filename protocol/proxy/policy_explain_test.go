package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// ExplainPolicy decides as the listings do, by the server's clock: every
// version the repository holds (or one named, held or not) gets the
// decision the server's index.json applies, and it changes with the
// clock as the listing does.
func TestExplainPolicy(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	ours, theirs := attesttest.Signer(t), attesttest.Signer(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, t0.Add(-100*time.Hour))
	attestAt(t, repo, pushAttested(t, repo, "1.1.0", nil), ours, pubrelease.ProviderPredicateType, t0)
	attestAt(t, repo, pushAttested(t, repo, "2.0.0-rc1", nil), theirs, pubrelease.ProviderPredicateType, t0.Add(-1000*time.Hour))
	clk := newClock(t0.Add(time.Hour))
	pol := factsPolicy(t, `
provider "example.com/test/*" {
  name     = "cool-down"
  min_age  = "3d"
  signers  = ["attestation:org.pub"]
}`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol, Now: clk.now})
	ctx := context.Background()

	explained := func() map[string]PolicyVerdict {
		t.Helper()
		vs, err := p.ExplainPolicy(ctx, names.KindProvider, "example.com/test/hello", "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]PolicyVerdict{}
		for _, v := range vs {
			if !v.Held || v.Rule != "cool-down" {
				t.Errorf("%+v", v)
			}
			out[v.Version] = v
		}
		return out
	}
	for _, step := range []struct {
		when string
		at   time.Duration
		want []string
	}{{"t0+1h", time.Hour, []string{"1.0.0"}}, {"t0+73h", 73 * time.Hour, []string{"1.0.0", "1.1.0"}}} {
		when, want := step.when, step.want
		clk.set(t0.Add(step.at))
		got := explained()
		listed := mirrorVersions(t, p, "/v1/mirror/example.com/test/hello/index.json")
		if len(got) != 3 {
			t.Fatalf("%s: %d decisions, want one per version held: %+v", when, len(got), got)
		}
		for v, d := range got {
			if _, ok := listed[v]; ok != d.Allow {
				t.Errorf("%s: %s allowed %v, listed %v: %s", when, v, d.Allow, ok, d.Reason)
			}
		}
		if len(listed) != len(want) {
			t.Errorf("%s: index.json lists %v, want %v", when, listed, want)
		}
	}
	if d := explained()["2.0.0-rc1"]; !strings.Contains(d.Reason, "is not signed by attestation:org.pub") {
		t.Errorf("2.0.0-rc1: %+v", d)
	}

	// A version the registry does not hold: its rule needs what the
	// registry holds of it, so it is denied, saying so.
	vs, err := p.ExplainPolicy(ctx, names.KindProvider, "example.com/test/hello", "9.0.0")
	if err != nil || len(vs) != 1 || vs[0].Held || vs[0].Allow || !strings.Contains(vs[0].Reason, "the registry holds no such version") {
		t.Errorf("9.0.0: %+v, %v", vs, err)
	}
	if _, err := p.ExplainPolicy(ctx, names.KindModule, "example.com/a/b/c", ""); err == nil {
		t.Error("a module without a module template: no error")
	}
}

// With an admission rule (--require-attestation) ExplainPolicy says, per
// version, what the rule says of the release serve would hand out, from
// the store's own admission: over two merged mappings, 1.0.0 is served
// from the second (the first's copy is attested by another key), 1.1.0 is
// allowed by the policy but refused, 2.0.0-rc1 denied by the policy
// (nothing asked of it); what it serves is what index.json lists.
func TestExplainPolicyAdmission(t *testing.T) {
	dirA, openA := layoutStore(t)
	dirB, openB := layoutStore(t)
	ours, theirs := attesttest.Signer(t), attesttest.Signer(t)
	pushAttested(t, openA("test", "hello"), "1.0.0", theirs)
	pushAttested(t, openB("test", "hello"), "1.0.0", ours)
	pushAttested(t, openA("test", "hello"), "1.1.0", theirs)
	pushAttested(t, openA("test", "hello"), "2.0.0-rc1", ours)
	pol := factsPolicy(t, `
provider "example.com/test/*" {
  name     = "stable"
  versions = ">= 1.0"
}`, nil)
	mappings := []store.ProviderMapping{
		{Template: mustTemplate(t, "oci-layout:"+dirA+"/${namespace}/${type}"), Label: "a"},
		{Template: mustTemplate(t, "oci-layout:"+dirB+"/${namespace}/${type}"), Label: "b"},
	}
	p := startProxy(t, Options{ProviderMappings: mappings, Policy: pol, RequireAttestation: []*attest.Verifier{ours.Public()}})
	vs, err := p.ExplainPolicy(context.Background(), names.KindProvider, "example.com/test/hello", "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]PolicyVerdict{}
	for _, v := range vs {
		got[v.Version] = v
	}
	if v := got["1.0.0"]; !v.Served() || v.Admission == nil || !v.Admission.Admitted {
		t.Errorf("1.0.0: %+v", v)
	}
	if v := got["1.1.0"]; !v.Allow || v.Served() || v.Admission == nil || !strings.Contains(v.Admission.Reason, notAttested) {
		t.Errorf("1.1.0: %+v", v)
	}
	if v := got["2.0.0-rc1"]; v.Allow || v.Admission != nil || v.Rule != "stable" {
		t.Errorf("2.0.0-rc1: %+v", v)
	}
	listed := mirrorVersions(t, p, "/v1/mirror/example.com/test/hello/index.json")
	for v, d := range got {
		if _, ok := listed[v]; ok != d.Served() {
			t.Errorf("%s: served %v by ExplainPolicy, listed %v", v, d.Served(), ok)
		}
	}
	if len(got) != 3 || len(listed) != 1 {
		t.Errorf("decisions %v, listed %v", got, listed)
	}
}
