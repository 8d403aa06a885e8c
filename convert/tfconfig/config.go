// Package tfconfig reads OpenTofu and Terraform configurations as the
// clients read them, for what `oci-tofu lock` needs: every provider the
// configuration requires and the version constraints on it, collected from
// the root module, its local modules and the modules `tofu init` already
// installed.
package tfconfig

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	goversion "github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Requirement is one provider a configuration requires, with the
// constraints of every module combined (all of them must hold).
type Requirement struct {
	Addr        names.Provider
	Constraints names.Constraints
}

// Module is one module of the configuration tree.
type Module struct {
	// Key is the module's path as modules.json names it: "" for the root,
	// "net" for module.net, "net.subnet" for module.net.module.subnet.
	Key string
	// Source is the source address as written ("" for the root).
	Source string
	// Dir is where the module was read from.
	Dir string
}

// Config is what a configuration requires.
type Config struct {
	Client       Client
	Modules      []Module      // sorted by key
	Requirements []Requirement // sorted as lock files are: host, namespace, type
}

// Options say how to read a configuration.
type Options struct {
	// Client decides which files count and where short addresses live.
	Client Client
}

// Bounds on the module tree: nesting depth, and modules in all (a tree of
// modules calling each other twice over grows exponentially).
const (
	maxModuleDepth = 64
	maxModules     = 10_000
)

// Load reads the configuration rooted at dir as the client does and
// returns every provider it requires. A configuration the client would
// refuse is a *ConfigError: diagnostics carrying the client's own summaries
// ("Duplicate required providers configuration", "Module not installed",
// …) and file positions.
func Load(dir string, opts Options) (*Config, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root) // as local module directories are
	}
	if err != nil {
		return nil, err
	}
	l := &loader{
		client: opts.Client.orDefault(),
		parser: hclparse.NewParser(),
		root:   root,
		reqs:   newRequirements(),
	}
	if l.manifest, err = readManifest(root); err != nil {
		return nil, err
	}
	if !hasConfigFiles(root, l.client) {
		return nil, configError(hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No configuration files",
			Detail:   fmt.Sprintf("%s holds no configuration files that %s reads.", root, l.client.Command()),
		}}, nil)
	}
	rootModule, diags := loadModule(l.parser, root, l.client, true)
	if diags.HasErrors() {
		return nil, configError(diags, l.parser.Files())
	}
	l.modules = append(l.modules, Module{Key: "", Dir: root})
	l.walk(rootModule, "", []string{root})
	if l.diags.HasErrors() {
		return nil, configError(l.diags, l.parser.Files())
	}
	cfg := &Config{Client: l.client, Modules: l.modules}
	sort.Slice(cfg.Modules, func(i, j int) bool { return cfg.Modules[i].Key < cfg.Modules[j].Key })
	reqs, diags := l.reqs.list()
	if diags.HasErrors() {
		return nil, configError(diags, l.parser.Files())
	}
	cfg.Requirements = reqs
	return cfg, nil
}

// hasConfigFiles reports whether dir holds configuration files (tests
// alone do not count).
func hasConfigFiles(dir string, c Client) bool {
	mf, err := listModuleFiles(dir, c, false)
	return err == nil && len(mf.primary)+len(mf.override) > 0
}

// loader walks a module tree.
type loader struct {
	client   Client
	parser   *hclparse.Parser
	root     string
	manifest manifest
	reqs     *requirements
	modules  []Module
	diags    hcl.Diagnostics
}

// walk adds m's requirements and descends into its module calls, in name
// order; path holds the directories of m and its callers.
func (l *loader) walk(m *module, key string, path []string) {
	l.diags = append(l.diags, m.addRequirements(l.reqs, l.client)...)
	for _, name := range slices.Sorted(maps.Keys(m.calls)) {
		call := m.calls[name]
		childKey := name
		if key != "" {
			childKey = key + "." + name
		}
		dir, source, diags := l.childDir(m.dir, childKey, call)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		if d := l.checkTreeBounds(childKey, dir, path, call); d != nil {
			l.diags = append(l.diags, d)
			return
		}
		child, diags := loadModule(l.parser, dir, l.client, false)
		l.diags = append(l.diags, diags...)
		if child == nil || diags.HasErrors() {
			continue
		}
		l.modules = append(l.modules, Module{Key: childKey, Source: source, Dir: dir})
		l.walk(child, childKey, append(path[:len(path):len(path)], dir))
	}
}

// checkTreeBounds refuses a module that calls itself (directly or through
// others), trees nested deeper than maxModuleDepth and trees of more than
// maxModules modules.
func (l *loader) checkTreeBounds(key, dir string, path []string, call *moduleCall) *hcl.Diagnostic {
	addr := "module." + strings.ReplaceAll(key, ".", ".module.")
	detail := ""
	switch {
	case slices.Contains(path, dir):
		detail = fmt.Sprintf("%s reads %s, which one of its callers is read from: the module calls itself.", addr, dir)
	case len(path) > maxModuleDepth:
		detail = fmt.Sprintf("%s is nested more than %d levels deep.", addr, maxModuleDepth)
	case len(l.modules) >= maxModules:
		detail = fmt.Sprintf("The configuration has more than %d modules.", maxModules)
	default:
		return nil
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Module tree too large", Detail: detail, Subject: call.rng.Ptr()}
}

// childDir finds the directory of a module call as the clients do: a
// local path ("./net", "../shared") relative to the calling module's
// directory, symlinks resolved; anything else where `tofu init` installed
// it, according to modules.json, checked against the configuration.
func (l *loader) childDir(parentDir, key string, call *moduleCall) (dir, source string, diags hcl.Diagnostics) {
	if call.source == nil {
		return "", "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Missing required argument",
			Detail:   `The argument "source" is required, but no definition was found.`,
			Subject:  call.rng.Ptr(),
		}}
	}
	raw, isNull, ok := stringValue(call.source)
	if !ok || isNull {
		// OpenTofu evaluates sources built from variables and locals
		// statically; lock takes the result tofu recorded.
		return l.installedDir(key, call, "", false)
	}
	if isLocalSource(raw) {
		return l.localModuleDir(parentDir, raw, call)
	}
	return l.installedDir(key, call, raw, true)
}

// isLocalSource reports a relative path source, which the clients read in
// place rather than install.
func isLocalSource(s string) bool {
	for _, prefix := range []string{"./", "../", `.\`, `..\`} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func (l *loader) localModuleDir(parentDir, raw string, call *moduleCall) (string, string, hcl.Diagnostics) {
	if call.versionAttr != nil {
		// A version makes both clients read the source as a registry
		// address, which a local path is not.
		return "", "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid registry module source address",
			Detail:   fmt.Sprintf("Failed to parse module registry address: can't use local directory %q as a module registry address.\n\n%s assumed that you intended a module registry source address because you also set the argument \"version\", which applies only to registry modules.", raw, l.client.product()),
			Subject:  call.source.Range().Ptr(),
		}}
	}
	clean := filepath.Clean(filepath.FromSlash(strings.ReplaceAll(raw, `\`, "/")))
	dir, err := filepath.EvalSymlinks(filepath.Join(parentDir, clean))
	if err != nil {
		return "", "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unreadable module directory",
			Detail:   fmt.Sprintf("The directory %s could not be read for module %q at %s:%d.", filepath.Join(parentDir, clean), call.name, call.rng.Filename, call.rng.Start.Line),
			Subject:  call.rng.Ptr(),
		}}
	}
	return dir, raw, nil
}

// installedDir finds an installed (non-local) module through modules.json,
// with the checks OpenTofu's loader makes: installed at all, from the
// same source, in a version the call still accepts.
func (l *loader) installedDir(key string, call *moduleCall, raw string, literal bool) (string, string, hcl.Diagnostics) {
	rec, ok := l.manifest[key]
	if !ok {
		what := fmt.Sprintf("module %q (source %q)", call.name, raw)
		if !literal {
			what = fmt.Sprintf("module %q, whose source is an expression OpenTofu evaluates statically,", call.name)
		}
		return "", raw, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Module not installed",
			Detail: fmt.Sprintf("%s is not installed yet, and oci-tofu lock reads installed modules from modules.json. Run \"%s init -backend=false\" (or \"%s get\") first; it installs modules without touching state.",
				what, l.client.Command(), l.client.Command()),
			Subject: call.rng.Ptr(),
		}}
	}
	var diags hcl.Diagnostics
	if literal {
		if want, comparable := normalizedSource(raw, call.versionAttr != nil, l.client); comparable && want != rec.Source {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Module source has changed",
				Detail:   fmt.Sprintf("The source address was changed from %q to %q since this module was installed. Run \"%s init -backend=false\" (or \"%s get\") to install all modules required by this configuration.", rec.Source, want, l.client.Command(), l.client.Command()),
				Subject:  call.source.Range().Ptr(),
			})
		}
	}
	diags = append(diags, l.checkInstalledVersion(call, rec)...)
	if diags.HasErrors() {
		return "", raw, diags
	}
	if raw == "" {
		raw = rec.Source
	}
	return rec.dir(l.root), raw, nil
}

// checkInstalledVersion refuses an installed module whose version the
// call's constraint no longer accepts (go-version semantics, as the
// clients check it).
func (l *loader) checkInstalledVersion(call *moduleCall, rec manifestRecord) hcl.Diagnostics {
	if call.versionAttr == nil {
		return nil
	}
	s, isNull, ok := stringValue(call.versionAttr.Expr)
	if !ok || isNull || s == "" {
		return nil
	}
	cons, err := goversion.NewConstraint(s)
	if err != nil {
		return invalidConstraint(call.versionAttr.Expr.Range())
	}
	changed := func(detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Module version requirements have changed",
			Detail:   detail + fmt.Sprintf(" Run \"%s init -backend=false\" (or \"%s get\") to install all modules required by this configuration.", l.client.Command(), l.client.Command()),
			Subject:  call.versionAttr.Range.Ptr(),
		}}
	}
	if rec.Version == "" {
		return changed("The version requirements have changed since this module was installed and the installed version is no longer acceptable.")
	}
	v, err := goversion.NewVersion(rec.Version)
	if err != nil || !cons.Check(v) {
		return changed(fmt.Sprintf("The version requirements have changed since this module was installed and the installed version (%s) is no longer acceptable.", rec.Version))
	}
	return nil
}

// normalizedSource is the form modules.json records a source in, for the
// source kinds whose normal form is certain: oci:// addresses as written,
// and registry addresses (calls with a version) with the default host
// made explicit. Other sources (git, http, go-getter shorthands) are
// normalised by go-getter's detectors, which lock does not reproduce, and
// are not compared.
func normalizedSource(raw string, hasVersion bool, c Client) (string, bool) {
	if strings.HasPrefix(raw, "oci://") {
		return raw, true
	}
	if !hasVersion {
		return "", false
	}
	pkg, subdir, _ := strings.Cut(raw, "//")
	parts := strings.Split(pkg, "/")
	switch len(parts) {
	case 3:
		pkg = c.RegistryHost() + "/" + pkg
	case 4:
		pkg = strings.ToLower(parts[0]) + "/" + strings.Join(parts[1:], "/")
	default:
		return "", false
	}
	if subdir != "" {
		pkg += "//" + subdir
	}
	return pkg, true
}

// requirements accumulates constraints per provider address, in the order
// addresses were first met.
type requirements struct {
	byAddr map[names.Provider]names.Constraints
	// constrained remembers where a built-in provider got a version
	// constraint, which the clients refuse.
	builtinConstrained map[names.Provider]hcl.Range
}

func newRequirements() *requirements {
	return &requirements{byAddr: map[names.Provider]names.Constraints{}, builtinConstrained: map[names.Provider]hcl.Range{}}
}

func (r *requirements) add(p names.Provider, c names.Constraints, rng hcl.Range) {
	if p == (names.Provider{}) {
		return
	}
	if IsBuiltin(p) && len(c) > 0 {
		if _, seen := r.builtinConstrained[p]; !seen {
			r.builtinConstrained[p] = rng
		}
	}
	r.byAddr[p] = append(r.byAddr[p], c...)
}

// list returns the lockable requirements sorted as lock files are.
// Built-in providers are never locked; a version constraint on one is an
// error, as in tofu init.
func (r *requirements) list() ([]Requirement, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []Requirement
	for p, c := range r.byAddr {
		if IsBuiltin(p) {
			if rng, ok := r.builtinConstrained[p]; ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid provider version constraint",
					Detail:   fmt.Sprintf("%s: built-in providers do not support explicit version constraints.", p),
					Subject:  rng.Ptr(),
				})
			}
			continue
		}
		out = append(out, Requirement{Addr: p, Constraints: c})
	}
	sort.Slice(out, func(i, j int) bool { return LessProvider(out[i].Addr, out[j].Addr) })
	return out, diags
}

// LessProvider orders addresses as OpenTofu orders lock file blocks: by
// hostname, then namespace, then type (not by the joined string, in which
// "a-b/x" would sort before "a/x").
func LessProvider(a, b names.Provider) bool {
	switch {
	case a.Hostname != b.Hostname:
		return a.Hostname < b.Hostname
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	}
	return a.Type < b.Type
}
