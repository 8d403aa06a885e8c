package moduledoc

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	inspect "github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// TestDifferentialConfigInspect compares every testdata module with what
// github.com/hashicorp/terraform-config-inspect (HCP Terraform's registry
// reader) reads, field by field where both define the field. Where the
// two read differently by design the test says why it does not compare:
// terraform-config-inspect reads no .tofu files nor ephemeral blocks and gives defaults as written (not converted to the type).
func TestDifferentialConfigInspect(t *testing.T) {
	for _, pkg := range fixturePackages(t) {
		p := extractClean(t, pkg)
		for _, m := range p.modules() {
			name := strings.TrimPrefix(filepath.Join(filepath.Base(pkg), m.Path), "/")
			t.Run(name, func(t *testing.T) {
				if slices.ContainsFunc(m.Files, isTofuFile) {
					t.Skip("terraform-config-inspect reads no .tofu files")
				}
				got, diags := inspect.LoadModule(filepath.Join(pkg, filepath.FromSlash(m.Path)))
				if diags.HasErrors() {
					t.Fatalf("terraform-config-inspect: %v", diags)
				}
				compareInspect(t, m, got)
			})
		}
	}
}

func isOverrideFile(file string) bool {
	name := filepath.Base(file)
	base := strings.TrimSuffix(name, configExt(name))
	return base == "override" || strings.HasSuffix(base, "_override")
}

func isTofuFile(name string) bool { return strings.HasPrefix(configExt(name), ".tofu") }

func compareInspect(t *testing.T, m *Module, got *inspect.Module) {
	t.Helper()
	compareField(t, "variables", len(m.Inputs), len(got.Variables))
	for _, in := range m.Inputs {
		v := got.Variables[in.Name]
		if v == nil {
			t.Errorf("variable %s: terraform-config-inspect does not have it", in.Name)
			continue
		}
		where := "var." + in.Name
		if isOverrideFile(v.Pos.Filename) {
			// terraform-config-inspect replaces the whole block where
			// OpenTofu merges the arguments (TestDifferentialTofu checks
			// ours against OpenTofu's merge).
			t.Logf("%s: overridden; terraform-config-inspect does not merge overrides as OpenTofu does", where)
			continue
		}
		compareField(t, where+".type", in.Type, v.Type)
		compareField(t, where+".description", in.Description, v.Description)
		compareField(t, where+".required", in.Required, v.Required)
		compareField(t, where+".sensitive", in.Sensitive, v.Sensitive)
		compareField(t, where+".deprecated", in.Deprecated, v.Deprecated)
		if in.Default != nil && !strings.Contains(in.Type, "optional(") {
			// Defaults as written equal defaults converted when no
			// optional attribute's default applies.
			theirs, err := json.Marshal(v.Default)
			if err != nil {
				t.Fatal(err)
			}
			compareField(t, where+".default", jsonValue(t, in.Default), jsonValue(t, theirs))
		}
	}
	compareField(t, "outputs", len(m.Outputs), len(got.Outputs))
	for _, out := range m.Outputs {
		o := got.Outputs[out.Name]
		if o == nil {
			t.Errorf("output %s: terraform-config-inspect does not have it", out.Name)
			continue
		}
		if isOverrideFile(o.Pos.Filename) {
			t.Logf("output.%s: overridden; terraform-config-inspect does not merge overrides as OpenTofu does", out.Name)
			continue
		}
		compareField(t, "output."+out.Name+".description", out.Description, o.Description)
		compareField(t, "output."+out.Name+".sensitive", out.Sensitive, o.Sensitive)
		compareField(t, "output."+out.Name+".deprecated", out.Deprecated, o.Deprecated)
	}
	compareField(t, "required_core", m.RequiredCore, nonNil(got.RequiredCore))
	for _, pr := range m.RequiredProviders {
		gp := got.RequiredProviders[pr.Name]
		if gp == nil {
			t.Errorf("provider %s: terraform-config-inspect does not have it", pr.Name)
			continue
		}
		compareField(t, "provider."+pr.Name+".source", pr.Source, gp.Source)
		compareField(t, "provider."+pr.Name+".version_constraints", pr.VersionConstraints, nonNil(gp.VersionConstraints))
	}
	var ours, theirs []string
	for _, r := range m.Resources {
		if r.Mode == "ephemeral" {
			continue // terraform-config-inspect reads no ephemeral blocks
		}
		ours = append(ours, r.Address+" "+r.Provider)
	}
	for _, rs := range []map[string]*inspect.Resource{got.ManagedResources, got.DataResources} {
		for _, r := range rs {
			addr := r.Type + "." + r.Name
			if r.Mode == inspect.DataResourceMode {
				addr = "data." + addr
			}
			theirs = append(theirs, addr+" "+r.Provider.Name)
		}
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	compareField(t, "resources", ours, theirs)
	compareField(t, "module calls", len(m.ModuleCalls), len(got.ModuleCalls))
	for _, c := range m.ModuleCalls {
		gc := got.ModuleCalls[c.Name]
		if gc == nil {
			t.Errorf("module %s: terraform-config-inspect does not have it", c.Name)
			continue
		}
		compareField(t, "module."+c.Name+".source", c.Source, gc.Source)
		compareField(t, "module."+c.Name+".version", c.Version, gc.Version)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
