package ingest

import (
	"strings"
	"testing"

	"github.com/apparentlymart/go-versions/versions"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func gatePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte("provider \"*/*/*\" {\n  name = \"p\"\n  deny = [\"2.0.0\"]\n}\ntofu {\n  name = \"t\"\n  deny = [\"1.9.0\"]\n}\n"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func versionList(vs ...string) versions.List {
	var l versions.List
	for _, v := range vs {
		l = append(l, versions.MustParseVersion(v))
	}
	return l
}

// A Gate leaves denied versions out (as denied results naming the rule),
// fails an exact choice it denies, and with WarnOnly takes everything
// with a warning.
func TestGate(t *testing.T) {
	g := Gate{Policy: gatePolicy(t)}
	take, denied, err := g.split(names.KindProvider, "example.com/acme/widgets", "example.com/acme/widgets", versionList("1.9.0", "2.0.0"), false)
	if err != nil || len(take) != 1 || take[0].String() != "1.9.0" || len(denied) != 1 || denied[0].Version != "2.0.0" || !strings.Contains(denied[0].Denied, `rule "p"`) {
		t.Errorf("split: %v %+v %v", take, denied, err)
	}
	if _, _, err := g.split(names.KindProvider, "example.com/acme/widgets", "x", versionList("2.0.0"), true); err == nil {
		t.Error("a denied exact choice was taken")
	}
	warn := Gate{Policy: g.Policy, WarnOnly: true}
	take, denied, _ = warn.split(names.KindProvider, "example.com/acme/widgets", "x", versionList("1.9.0", "2.0.0"), false)
	if len(take) != 2 || len(denied) != 0 || len(warn.warnings(names.KindProvider, "example.com/acme/widgets", versions.MustParseVersion("2.0.0"))) != 1 {
		t.Errorf("WarnOnly: %v %+v", take, denied)
	}
	if take, denied, _ := (Gate{}).split(names.KindProvider, "a/b/c", "x", versionList("2.0.0"), true); len(take) != 1 || denied != nil {
		t.Error("the zero Gate refused")
	}
}

// Without --tofu-versions, the newest stable release the policy allows is
// taken, and the newer denied one reported.
func TestChooseTofu(t *testing.T) {
	opts := TofuOptions{Gate: Gate{Policy: gatePolicy(t)}}
	chosen, denied := chooseTofu(versionList("1.8.0", "1.9.0", "1.10.0-beta1"), opts)
	if len(chosen) != 1 || chosen[0].String() != "1.8.0" || len(denied) != 1 || denied[0].Version != "1.9.0" {
		t.Errorf("newest stable: %v %+v", chosen, denied)
	}
	var err error
	if opts.Versions, err = names.ParseConstraints(">= 1.8.0"); err != nil {
		t.Fatal(err)
	}
	chosen, denied = chooseTofu(versionList("1.8.0", "1.9.0", "1.10.0-beta1"), opts)
	if len(chosen) != 1 || chosen[0].String() != "1.8.0" || len(denied) != 1 {
		t.Errorf(">= 1.8.0: %v %+v", chosen, denied)
	}
}
