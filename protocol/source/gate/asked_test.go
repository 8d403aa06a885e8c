package gate_test

import (
	"log/slog"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

// A decision on a version a request names (Version) is observed as
// asked: it may exist nowhere; one in a listing (Allowed, Versions) is
// on a version the listing holds.
func TestDecisionsSayWhetherAsked(t *testing.T) {
	pol, err := policy.Parse([]byte(`provider "example.com/test/hello" {
  name = "hello"
  deny = ["1.0.0"]
}`), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var observed []source.Decision
	judge := &gate.Policy{Live: policy.NewLive(pol), Log: slog.New(slog.DiscardHandler),
		Observe: func(d source.Decision) { observed = append(observed, d) }}
	v, err := names.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	const a = "example.com/test/hello"
	if judge.Version(names.KindProvider, a, "hello", v) == nil {
		t.Fatal("1.0.0 allowed")
	}
	judge.Allowed(names.KindProvider, a, []names.Version{v})
	judge.Versions(names.KindProvider, a, "hello", []names.Version{v})
	if len(observed) != 3 || !observed[0].Asked || observed[1].Asked || observed[2].Asked {
		t.Errorf("observed %+v; want the Version's asked, the listings' not", observed)
	}
}
