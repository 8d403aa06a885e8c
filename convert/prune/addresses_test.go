package prune

import (
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

func providerTarget(t *testing.T, tpl *repotemplate.Template, address string) Target {
	t.Helper()
	p, err := names.ParseProvider(address)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tpl.Expand(p.TemplateValues())
	if err != nil {
		t.Fatal(err)
	}
	return Target{Ref: ref, Provider: &p}
}

// A lock entry pins what its address maps to through the template,
// whatever host it names, with or without its port; an ADDRESS target
// and the REPOSITORY target of the same repository are pinned alike.
func TestLockedRepositoriesAnyHost(t *testing.T) {
	tpl, _ := repotemplate.ParseProviderTemplate("reg.example/providers/${namespace}/${type}")
	byHost, _ := repotemplate.ParseProviderTemplate("reg.example/h/${hostname}/${namespace}/${type}")
	addr := providerTarget(t, tpl, "acme/widgets")
	repoForm := Target{Ref: oci.Reference{Registry: "reg.example", Repository: "providers/acme/widgets"}}
	for _, entry := range []string{"tofu.example.com:8443/acme/widgets", "registry.terraform.io/acme/widgets", "acme/widgets"} {
		p, _ := names.ParseProvider(entry)
		if got := LockedRepositories(tpl, []Target{addr}, p); !slices.Equal(got, []string{"reg.example/providers/acme/widgets"}) {
			t.Errorf("ADDRESS form: %s pins %v", entry, got)
		}
		if got := LockedRepositories(nil, []Target{repoForm}, p); !slices.Equal(got, []string{"reg.example/providers/acme/widgets"}) {
			t.Errorf("REPOSITORY form: %s pins %v", entry, got)
		}
	}
	// Under ${hostname}, the port is dropped as serve drops it.
	host := providerTarget(t, byHost, "tofu.example.com/acme/widgets")
	p, _ := names.ParseProvider("tofu.example.com:8443/acme/widgets")
	if got := LockedRepositories(byHost, []Target{host}, p); len(got) != 1 {
		t.Errorf("tofu.example.com:8443/acme/widgets pins %v under %s", got, byHost)
	}
	other, _ := names.ParseProvider("registry.terraform.io/acme/gadgets")
	if got := LockedRepositories(tpl, []Target{addr, repoForm}, other); len(got) != 0 {
		t.Errorf("acme/gadgets pins %v", got)
	}
	w := UnpinnedWarning([]Locked{{File: "a/.terraform.lock.hcl", Provider: other, Tag: "1.0.0"}}, func(p names.Provider) []string { return LockedRepositories(tpl, []Target{addr}, p) })
	if !strings.Contains(w, "registry.terraform.io/acme/gadgets (a/.terraform.lock.hcl)") {
		t.Errorf("warning %q", w)
	}
}

func mustPolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(src), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The policy is asked about the target's names on every host the
// template maps to it, and on any host without a template; a keep block
// about a target that decides none of them is refused with its line.
func TestServedAddressesAndKeepBlocks(t *testing.T) {
	pol := mustPolicy(t, `provider "tofu.example.com/acme/widgets" {
  keep { versions = "1.0.0" }
}
provider "hashicorp/aws" {
  keep {}
}
`)
	tpl, _ := repotemplate.ParseProviderTemplate("reg.example/providers/${namespace}/${type}")
	byHost, _ := repotemplate.ParseProviderTemplate("reg.example/h/${hostname}/${namespace}/${type}")
	plan := func(tp *repotemplate.Template, target Target) *Plan {
		as, err := ServedAddresses(pol, tp, target, names.KindProvider)
		if err != nil {
			t.Fatal(err)
		}
		return &Plan{Repository: Repository{Name: target.Ref.Name(), Kind: names.KindProvider, Addresses: as}}
	}
	v := names.MustParseVersion("1.0.0")
	keeps := func(p *Plan) bool {
		return slices.ContainsFunc(p.Repository.Addresses, func(a string) bool { return pol.Keeps(names.KindProvider, a, v) })
	}
	repoForm := Target{Ref: oci.Reference{Registry: "reg.example", Repository: "providers/acme/widgets"}}
	for _, p := range []*Plan{plan(tpl, providerTarget(t, tpl, "acme/widgets")), plan(nil, repoForm)} {
		if !keeps(p) {
			t.Errorf("%s (addresses %v): 1.0.0 not kept", p.Repository.Name, p.Repository.Addresses)
		}
		w, err := CheckKeepBlocks(pol, []*Plan{p})
		if err != nil || !strings.Contains(w, "policy.hcl:5") {
			t.Errorf("%s: checkKeepBlocks = %q, %v; want a warning naming policy.hcl:5 (hashicorp/aws)", p.Repository.Name, w, err)
		}
	}
	p := plan(byHost, providerTarget(t, byHost, "example.com/acme/widgets"))
	if keeps(p) {
		t.Errorf("under %s, example.com/acme/widgets (%v) is kept by tofu.example.com's block", byHost, p.Repository.Addresses)
	}
	if _, err := CheckKeepBlocks(pol, []*Plan{p}); err == nil || !strings.Contains(err.Error(), "policy.hcl:2") {
		t.Errorf("checkKeepBlocks = %v, want an error naming policy.hcl:2", err)
	}
}
