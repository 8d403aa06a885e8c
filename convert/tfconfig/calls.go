package tfconfig

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ModuleCall is a call of a registry module: its address, as the client
// reads a source like [HOST/]NAMESPACE/NAME/SYSTEM[//SUBDIR], and the
// version constraints of its version argument.
type ModuleCall struct {
	// Key is the calling path, as modules.json names it ("net",
	// "net.subnet").
	Key         string
	Host        string
	Module      names.Module
	Constraints names.Constraints
}

// RegistryModuleCalls lists the registry module calls of the configuration
// at dir and of its local modules (./ and ../ sources), without needing
// `init`: what `oci-tofu mirror --modules-from` fetches. Calls inside
// registry modules are not followed (they are known only once fetched).
func RegistryModuleCalls(dir string, opts Options) ([]ModuleCall, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, err
	}
	w := &callWalker{client: opts.Client.orDefault(), parser: hclparse.NewParser(), active: map[string]bool{}}
	w.walk(root, "", 0)
	if w.diags.HasErrors() {
		return nil, configError(w.diags, w.parser.Files())
	}
	return w.calls, nil
}

type callWalker struct {
	client Client
	parser *hclparse.Parser
	active map[string]bool // directories being walked (a module calling itself)
	walked int
	calls  []ModuleCall
	diags  hcl.Diagnostics
}

func (w *callWalker) walk(dir, key string, depth int) {
	if w.active[dir] || depth > maxModuleDepth || w.walked >= maxModules {
		return
	}
	w.active[dir], w.walked = true, w.walked+1
	defer delete(w.active, dir)
	m, diags := loadModule(w.parser, dir, w.client, key == "")
	w.diags = append(w.diags, diags...)
	if m == nil || diags.HasErrors() {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(m.calls)) {
		call := m.calls[name]
		childKey := name
		if key != "" {
			childKey = key + "." + name
		}
		if call.source == nil {
			continue
		}
		raw, isNull, ok := stringValue(call.source)
		if !ok || isNull {
			continue
		}
		if isLocalSource(raw) {
			if child, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(raw))); err == nil {
				w.walk(child, childKey, depth+1)
			}
			continue
		}
		w.addRegistryCall(childKey, raw, call)
	}
}

// addRegistryCall records a call whose source is a registry address.
func (w *callWalker) addRegistryCall(key, raw string, call *moduleCall) {
	host, mod, ok := ParseRegistrySource(raw, w.client)
	if !ok {
		return
	}
	mc := ModuleCall{Key: key, Host: host, Module: mod}
	if call.versionAttr != nil {
		s, isNull, ok := stringValue(call.versionAttr.Expr)
		c, err := names.ParseConstraints(s)
		if !ok || isNull || err != nil {
			w.diags = append(w.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid version constraint",
				Detail: fmt.Sprintf("module %q: the version argument is not a valid constraint", call.name), Subject: call.versionAttr.Range.Ptr()})
			return
		}
		mc.Constraints = c
	}
	w.calls = append(w.calls, mc)
}

// notRegistryHosts are hosts whose addresses the clients read as other
// source types (go-getter detectors), never as registry addresses.
var notRegistryHosts = []string{"github.com", "bitbucket.org", "gitlab.com"}

// ParseRegistrySource reads [HOST/]NAMESPACE/NAME/SYSTEM[//SUBDIR] as the
// clients read a registry module source (the client's registry when the
// host is left out); ok is false for any other kind of source.
func ParseRegistrySource(raw string, c Client) (host string, mod names.Module, ok bool) {
	pkg, _, _ := strings.Cut(raw, "//")
	if strings.Contains(pkg, "::") || strings.Contains(pkg, "?") {
		return "", names.Module{}, false
	}
	parts := strings.Split(pkg, "/")
	host = c.RegistryHost()
	switch len(parts) {
	case 3:
	case 4:
		host, parts = strings.ToLower(parts[0]), parts[1:]
		if !names.ValidHostname(host) || slices.Contains(notRegistryHosts, host) {
			return "", names.Module{}, false
		}
	default:
		return "", names.Module{}, false
	}
	mod, err := names.ParseModule(parts[0], parts[1], parts[2])
	if err != nil {
		return "", names.Module{}, false
	}
	return host, mod, true
}
