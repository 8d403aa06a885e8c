package preflight_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

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

// serve --check reports the access configuration: each client, what it
// reads and what names it; an expired or soon expiring client, or one
// whose patterns match nothing mapped, is a warning.
func TestPolicyClientRows(t *testing.T) {
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := policy.Parse([]byte(fmt.Sprintf(`
client "ok" {
  tokens    = [%q]
  providers = ["example.com/acme/*"]
  rate      = 5
}
client "gone" {
  tokens  = [%q]
  expires = "2026-12-01T00:00:00Z"
}
client "soon" {
  tokens  = [%q]
  expires = "2027-01-03T00:00:00Z"
}
client "nowhere" {
  tokens = [%q]
  tofu   = true
}
`, policy.TokenHash("a"), policy.TokenHash("b"), policy.TokenHash("c"), policy.TokenHash("d"))), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	mappings := store.ProviderMappings{{Include: []string{"example.com/*/*"}}}
	got := map[string]preflight.Result{}
	for _, r := range preflight.Policy(preflight.PolicyConfig{Policy: p, File: "policy.hcl", Providers: mappings, OperatorTokens: 1, Now: now}) {
		got[r.Target] = r
	}
	for target, want := range map[string]string{
		"client authentication": "ok 4 clients in the policy file, and 1 --auth-token-file token reading everything",
		"client ok":             "ok reads 1 provider pattern; named by 1 token; 5 requests per second, bursts of 10",
		"client gone":           "warning its tokens expired at 2026-12-01T00:00:00Z: it reads nothing",
		"client soon":           "warning its tokens expire at 2027-01-03T00:00:00Z, in 48h0m0s",
		"client nowhere":        "warning tofu = true, but no OpenTofu repository is configured",
	} {
		if r := got[target]; r.Status+" "+r.Detail != want {
			t.Errorf("%s: %q, want %q", target, r.Status+" "+r.Detail, want)
		}
	}
}
