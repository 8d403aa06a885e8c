package preflight_test

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/preflight"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func TestPolicyRulesThatMatchNothing(t *testing.T) {
	p, err := policy.Parse([]byte(`
provider "example.com/acme/*" { name = "acme" }
provider "example.com/other/x" { name = "excluded" }
provider "registry.opentofu.org/hashicorp/aws" { name = "not-included" }
module "example.com/a/b/c" { name = "mod" }
tofu { name = "releases" }
`), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	mappings := store.ProviderMappings{{Include: []string{"example.com/*/*"}, Exclude: []string{"example.com/other/*"}}}
	got := map[string]string{}
	for _, r := range preflight.Policy(preflight.PolicyConfig{Policy: p, File: "policy.hcl", Providers: mappings}) {
		got[r.Target] = r.Status + ": " + r.Detail
		if r.Mapping != "policy.hcl" {
			t.Errorf("%s: mapping %q", r.Target, r.Mapping)
		}
	}
	want := map[string]string{
		`policy provider rule "excluded"`:     "warning: example.com/other/x matches no provider address",
		`policy provider rule "not-included"`: "warning: registry.opentofu.org/hashicorp/aws matches no provider address",
		`policy module rule "mod"`:            "warning: no module template is configured",
		`policy tofu rule "releases"`:         "warning: no OpenTofu repository is configured",
	}
	if len(got) != len(want) {
		t.Errorf("got %v", got)
	}
	for target, w := range want {
		if !strings.HasPrefix(got[target], w) {
			t.Errorf("%s: %q, want %q…", target, got[target], w)
		}
	}
	// Everything mapped: one ok row.
	all := preflight.Policy(preflight.PolicyConfig{Policy: p, File: "policy.hcl", Providers: store.ProviderMappings{{}}, Modules: true, Tofu: true})
	if len(all) != 1 || all[0].Status != preflight.StatusOK || all[0].Detail != "5 rules, each can match what this proxy maps" {
		t.Errorf("all mapped: %+v", all)
	}
}
