package moduledoc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TestDifferentialTofu compares the interface of every module of every
// testdata package (root, submodules, examples) with what the real
// `tofu show -json -config` prints for the same directory: variables
// (type as a cty type, default, required, description, sensitive,
// ephemeral, deprecated), outputs, resources, module calls (recursively
// into the modules they call inside the package) and the root's provider
// requirements.
func TestDifferentialTofu(t *testing.T) {
	tofu := testenv.Tool(t, "tofu")
	provider := newFakeProvider(t, tofu)
	for _, pkg := range fixturePackages(t) {
		p := extractClean(t, pkg)
		for _, m := range p.modules() {
			name := strings.TrimPrefix(filepath.Join(filepath.Base(pkg), m.Path), "/")
			t.Run(name, func(t *testing.T) {
				got := tofuShowConfig(t, tofu, provider, pkg, p, m)
				compareTofuModule(t, "", p, m, got.RootModule)
				compareTofuProviders(t, m, got.ProviderConfig)
			})
		}
	}
}

type tofuConfig struct {
	ProviderConfig map[string]tofuProvider `json:"provider_config"`
	RootModule     tofuModule              `json:"root_module"`
}

type tofuProvider struct {
	Name              string `json:"name"`
	FullName          string `json:"full_name"`
	VersionConstraint string `json:"version_constraint"`
	ModuleAddress     string `json:"module_address"`
}

type tofuModule struct {
	Variables   map[string]map[string]json.RawMessage `json:"variables"`
	Outputs     map[string]map[string]json.RawMessage `json:"outputs"`
	Resources   []tofuResource                        `json:"resources"`
	ModuleCalls map[string]tofuCall                   `json:"module_calls"`
}

type tofuResource struct {
	Address, Mode, Type string
}

type tofuCall struct {
	Source            string     `json:"source"`
	VersionConstraint string     `json:"version_constraint"`
	Module            tofuModule `json:"module"`
}

// tofuShowConfig copies the package, installs its module calls by hand
// (local ones where they are, others as empty stubs: nothing is
// downloaded) and runs tofu show -json -config in module m's directory.
func tofuShowConfig(t *testing.T, tofu string, provider *fakeProvider, pkg string, p *Package, m *Module) tofuConfig {
	t.Helper()
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(pkg)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, filepath.FromSlash(m.Path))
	var manifest []map[string]string
	manifest = append(manifest, map[string]string{"Key": "", "Source": "", "Dir": "."})
	installCalls(t, p, m, m.Path, "", m.Path, dir, &manifest)
	writeJSON(t, filepath.Join(dir, ".terraform", "modules", "modules.json"), map[string]any{"Modules": manifest})
	cliConfig := provider.cliConfig(t, p, m) // sets MODULEDOC_FAKE_TYPES
	cmd := exec.Command(tofu, "show", "-json", "-config", "-no-color")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cliConfig, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tofu show -json -config in %s: %v\n%s%s", m.Path, err, stdout.String(), stderr.String())
	}
	var got tofuConfig
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("tofu's JSON: %v\n%s", err, stdout.String())
	}
	return got
}

var localSource = regexp.MustCompile(`^\.\.?/`)

// installCalls adds module m's calls (m at `at` from the package root,
// its key prefix; tofu runs in runAt, rootDir on disk) to the manifest tofu reads instead of installing.
func installCalls(t *testing.T, p *Package, m *Module, at, prefix, runAt, rootDir string, manifest *[]map[string]string) {
	t.Helper()
	for _, c := range m.ModuleCalls {
		key := c.Name
		if prefix != "" {
			key = prefix + "." + c.Name
		}
		if localSource.MatchString(c.Source) {
			target := path.Join(at, c.Source)
			*manifest = append(*manifest, map[string]string{"Key": key, "Source": c.Source, "Dir": relDir(t, runAt, target)})
			if callee := p.module(target); callee != nil {
				installCalls(t, p, callee, target, key, runAt, rootDir, manifest)
			}
			continue
		}
		stub := filepath.Join(rootDir, ".terraform", "modules", key)
		if err := os.MkdirAll(stub, 0o755); err != nil {
			t.Fatal(err)
		}
		*manifest = append(*manifest, map[string]string{"Key": key, "Source": registrySource(c.Source), "Version": someVersion(c.Version), "Dir": filepath.ToSlash(filepath.Join(".terraform", "modules", key))})
	}
}

// relDir is target's directory (from the package root) relative to the
// directory tofu runs in (runAt, from the package root).
func relDir(t *testing.T, runAt, target string) string {
	t.Helper()
	rel, err := filepath.Rel("/"+runAt, "/"+target)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// module finds the package's module at a path from the root.
func (p *Package) module(at string) *Module {
	at = strings.TrimPrefix(path.Clean(at), ".")
	for _, m := range p.modules() {
		if m.Path == at {
			return m
		}
	}
	return nil
}

// registrySource is a registry module address in full, as tofu records
// it in the manifest.
func registrySource(s string) string {
	if strings.Count(s, "/") == 2 && !strings.Contains(s, ":") {
		return "registry.opentofu.org/" + s
	}
	return s
}

var versionNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+){0,2}`)

// someVersion is a version that satisfies a simple constraint (the first
// version it names, in full).
func someVersion(constraint string) string {
	v := versionNumber.FindString(constraint)
	if v == "" {
		return ""
	}
	for strings.Count(v, ".") < 2 {
		v += ".0"
	}
	return v
}

func writeJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// compareTofuModule compares one module with tofu's view of it, and the
// modules it calls inside the package with tofu's views of those.
func compareTofuModule(t *testing.T, where string, p *Package, m *Module, got tofuModule) {
	t.Helper()
	if len(got.Variables) != len(m.Inputs) {
		t.Errorf("%s: tofu has %d variables, we have %d", where, len(got.Variables), len(m.Inputs))
	}
	for _, in := range m.Inputs {
		v, ok := got.Variables[in.Name]
		if !ok {
			t.Errorf("%s: variable %s: tofu does not have it", where, in.Name)
			continue
		}
		compareTofuVariable(t, where+"var."+in.Name, in, v)
	}
	if len(got.Outputs) != len(m.Outputs) {
		t.Errorf("%s: tofu has %d outputs, we have %d", where, len(got.Outputs), len(m.Outputs))
	}
	for _, out := range m.Outputs {
		o, ok := got.Outputs[out.Name]
		if !ok {
			t.Errorf("%s: output %s: tofu does not have it", where, out.Name)
			continue
		}
		compareField(t, where+"output."+out.Name+".description", out.Description, jsonString(o["description"]))
		compareField(t, where+"output."+out.Name+".sensitive", out.Sensitive, jsonBool(o["sensitive"]))
		compareField(t, where+"output."+out.Name+".ephemeral", out.Ephemeral, jsonBool(o["ephemeral"]))
		compareField(t, where+"output."+out.Name+".deprecated", out.Deprecated, jsonString(o["deprecated"]))
	}
	var ours, theirs []string
	for _, r := range m.Resources {
		ours = append(ours, r.Address+" "+r.Mode+" "+r.Type)
	}
	for _, r := range got.Resources {
		theirs = append(theirs, r.Address+" "+r.Mode+" "+r.Type)
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	compareField(t, where+"resources", ours, theirs)
	if len(got.ModuleCalls) != len(m.ModuleCalls) {
		t.Errorf("%s: tofu has %d module calls, we have %d", where, len(got.ModuleCalls), len(m.ModuleCalls))
	}
	for _, c := range m.ModuleCalls {
		gc, ok := got.ModuleCalls[c.Name]
		if !ok {
			t.Errorf("%s: module %s: tofu does not have it", where, c.Name)
			continue
		}
		compareField(t, where+"module."+c.Name+".source", c.Source, gc.Source)
		compareField(t, where+"module."+c.Name+".version", c.Version, gc.VersionConstraint)
		if localSource.MatchString(c.Source) {
			if callee := p.module(path.Join(m.Path, c.Source)); callee != nil {
				compareTofuModule(t, where+"module."+c.Name+".", p, callee, gc.Module)
			}
		}
	}
}

func compareTofuVariable(t *testing.T, where string, in Input, v map[string]json.RawMessage) {
	t.Helper()
	ourType, err := ctyjson.UnmarshalType(in.TypeJSON)
	if err != nil {
		t.Errorf("%s: our type_json %s: %v", where, in.TypeJSON, err)
	}
	theirType := cty.DynamicPseudoType
	if raw, ok := v["type"]; ok {
		if theirType, err = ctyjson.UnmarshalType(raw); err != nil {
			t.Errorf("%s: tofu's type %s: %v", where, raw, err)
		}
	}
	if !ourType.Equals(theirType) {
		t.Errorf("%s: type %s (%s), tofu %s", where, in.TypeJSON, in.Type, v["type"])
	}
	theirDefault, hasDefault := v["default"]
	switch {
	case hasDefault != (in.Default != nil):
		t.Errorf("%s: default %s, tofu %s", where, in.Default, theirDefault)
	case hasDefault:
		compareField(t, where+".default", jsonValue(t, in.Default), jsonValue(t, theirDefault))
	}
	compareField(t, where+".required", in.Required, jsonBool(v["required"]))
	compareField(t, where+".description", in.Description, jsonString(v["description"]))
	compareField(t, where+".sensitive", in.Sensitive, jsonBool(v["sensitive"]))
	compareField(t, where+".ephemeral", in.Ephemeral, jsonBool(v["ephemeral"]))
	compareField(t, where+".deprecated", in.Deprecated, jsonString(v["deprecated"]))
}

// compareTofuProviders compares a root module's provider requirements
// with tofu's provider configurations of the root module, both ways.
func compareTofuProviders(t *testing.T, m *Module, got map[string]tofuProvider) {
	t.Helper()
	for key, gp := range got {
		if gp.ModuleAddress == "" && !strings.Contains(key, ".") && !slices.ContainsFunc(m.RequiredProviders, func(pr ProviderRequirement) bool { return pr.Name == key }) {
			t.Errorf("provider %s (%s): tofu has it, we do not", key, gp.FullName)
		}
	}
	for _, pr := range m.RequiredProviders {
		gp, ok := got[pr.Name]
		if !ok {
			t.Errorf("provider %s: tofu does not have it (%v)", pr.Name, got)
			continue
		}
		compareField(t, "provider."+pr.Name+".address", pr.Address, gp.FullName)
		compareField(t, "provider."+pr.Name+".version", normalConstraints(pr.VersionConstraints), gp.VersionConstraint)
	}
}

// normalConstraints writes constraints as tofu prints them: joined, each
// version in full except after ~>.
func normalConstraints(cs []string) string {
	var parts []string
	for _, c := range cs {
		for _, part := range strings.Split(c, ",") {
			part = strings.TrimSpace(part)
			op := strings.TrimSpace(strings.TrimRightFunc(part, func(r rune) bool { return r >= '0' && r <= '9' || r == '.' }))
			v := strings.TrimSpace(strings.TrimPrefix(part, op))
			if op == "" {
				op = "="
			}
			if op != "~>" {
				for strings.Count(v, ".") < 2 {
					v += ".0"
				}
			}
			parts = append(parts, op+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func compareField(t *testing.T, where string, ours, theirs any) {
	t.Helper()
	if !reflect.DeepEqual(ours, theirs) {
		t.Errorf("%s: ours %#v, theirs %#v", where, ours, theirs)
	}
}

func jsonValue(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("JSON %s: %v", raw, err)
	}
	return v
}

func jsonString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func jsonBool(raw json.RawMessage) bool {
	var b bool
	_ = json.Unmarshal(raw, &b)
	return b
}

// fakeProvider is OpenTofu's own simple test provider, built from the
// OpenTofu source in the module cache with testdata/fakeprovider/main.go
// as its main: it has every resource type asked for, so tofu can read
// configurations of any provider offline. Built once per OpenTofu
// version and main.go, in the user's cache directory.
type fakeProvider struct {
	binary string // "" when it could not be built
	reason string
}

func newFakeProvider(t *testing.T, tofu string) *fakeProvider {
	t.Helper()
	cmd := exec.Command(tofu, "version", "-json")
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+os.DevNull, "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tofu version: %v", err)
	}
	var ver struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &ver); err != nil {
		t.Fatalf("tofu version -json: %v", err)
	}
	version := strings.TrimSuffix(ver.Version, "-dev")
	gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return &fakeProvider{reason: "go env GOMODCACHE: " + err.Error()}
	}
	src := filepath.Join(strings.TrimSpace(string(gomodcache)), "github.com", "opentofu", "opentofu@v"+version)
	if _, err := os.Stat(src); err != nil {
		return &fakeProvider{reason: fmt.Sprintf("OpenTofu v%s's source is not in the module cache (go mod download github.com/opentofu/opentofu@v%s): %v", version, version, err)}
	}
	main, err := os.ReadFile(filepath.Join("testdata", "fakeprovider", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(main, version...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	binary := filepath.Join(cache, "oci-tofu", "moduledoc-fakeprovider-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(binary); err == nil {
		return &fakeProvider{binary: binary}
	}
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	mainFile := filepath.Join(work, "internal", "provider-simple-v6", "main", "main.go")
	if err := os.Chmod(filepath.Dir(mainFile), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(mainFile)
	if err := os.WriteFile(mainFile, main, 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", binary+".tmp", "./internal/provider-simple-v6/main")
	build.Dir = work
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return &fakeProvider{reason: fmt.Sprintf("building the fake provider from %s offline: %v\n%s", src, err, out)}
	}
	if err := os.Rename(binary+".tmp", binary); err != nil {
		t.Fatal(err)
	}
	return &fakeProvider{binary: binary}
}

// cliConfig writes a CLI configuration for module m: no provider
// installation at all for modules of the builtin provider only, dev
// overrides to the fake provider for the others (skipping the test when
// it could not be built).
func (f *fakeProvider) cliConfig(t *testing.T, p *Package, m *Module) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "tofu.tfrc")
	sources, types := providersOf(p, m, map[*Module]bool{})
	if len(sources) == 0 {
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	if f.binary == "" {
		t.Fatalf("module %s needs providers and the fake provider could not be built (make tools builds tofu, which puts its source in the module cache): %s", m.Path, f.reason)
	}
	var b strings.Builder
	b.WriteString("provider_installation {\n  dev_overrides {\n")
	for _, s := range sources {
		typ := s[strings.LastIndex(s, "/")+1:]
		if err := os.Symlink(f.binary, filepath.Join(dir, "terraform-provider-"+typ)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "    %q = %q\n", s, dir)
	}
	b.WriteString("  }\n  direct {}\n}\n")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MODULEDOC_FAKE_TYPES", strings.Join(types, ","))
	return file
}

// providersOf are the provider addresses (other than the builtin one) and
// resource types module m and the package modules it calls use.
func providersOf(p *Package, m *Module, seen map[*Module]bool) (sources, types []string) {
	if seen[m] {
		return nil, nil
	}
	seen[m] = true
	addrs := map[string]string{}
	for _, pr := range m.RequiredProviders {
		addrs[pr.Name] = pr.Address
	}
	for _, r := range m.Resources {
		if r.Provider == "terraform" {
			continue
		}
		types = append(types, r.Type)
		if a, ok := addrs[r.Provider]; ok {
			sources = append(sources, a)
		} else {
			sources = append(sources, "registry.opentofu.org/hashicorp/"+r.Provider)
		}
	}
	for _, pr := range m.RequiredProviders {
		if pr.Name != "terraform" {
			sources = append(sources, pr.Address)
		}
	}
	for _, c := range m.ModuleCalls {
		if callee := p.module(path.Join(m.Path, c.Source)); localSource.MatchString(c.Source) && callee != nil {
			s, ty := providersOf(p, callee, seen)
			sources, types = append(sources, s...), append(types, ty...)
		}
	}
	slices.Sort(sources)
	slices.Sort(types)
	return slices.Compact(sources), slices.Compact(types)
}
