package assistant

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// maxAddress bounds an address argument.
const maxAddress = 512

// moduleID is a module address, the version asked for (nil: the
// newest served) and the directory shown ("" for the root module,
// "modules/DIR" or "examples/DIR"), as the catalogue's path names them.
type moduleID struct {
	host, namespace, name, system string
	version                       *names.Version
	dir                           string
}

// path is the catalogue path of m (a directory's needs m.version).
func (m moduleID) path() string {
	p := "modules/" + m.host + "/" + m.namespace + "/" + m.name + "/" + m.system
	if m.version != nil {
		p += "/" + m.version.String()
		if kind, name, ok := strings.Cut(m.dir, "/"); ok {
			p += "/" + kind + "/" + url.PathEscape(name)
		}
	}
	return p
}

// atVersion is m at version v.
func (m moduleID) atVersion(v names.Version) moduleID {
	m.version = &v
	return m
}

// parseModuleID reads [HOST/]NAMESPACE/NAME/SYSTEM[/VERSION][//DIR]
// (the module_id search_modules returns, or HashiCorp's
// NAMESPACE/NAME/SYSTEM/VERSION; DIR a submodule's modules/NAME or an
// example's examples/NAME, as a module source writes it); without HOST
// the module is the proxy's own (own). version, when not "", is the
// version asked for.
func parseModuleID(s, version, own string) (moduleID, error) {
	if len(s) > maxAddress {
		return moduleID{}, fmt.Errorf("module_id is longer than %d bytes", maxAddress)
	}
	s, dir, hasDir := strings.Cut(strings.TrimSpace(s), "//")
	if hasDir && !validDir(dir) {
		return moduleID{}, fmt.Errorf("module_id %q: after // want modules/NAME or examples/NAME, as get_module_details lists them", clip(s+"//"+dir))
	}
	parts := strings.Split(s, "/")
	hasHost := len(parts) == 5 || len(parts) == 4 && looksLikeHost(parts[0])
	if !hasHost {
		parts = append([]string{own}, parts...)
	}
	if len(parts) != 4 && len(parts) != 5 {
		return moduleID{}, fmt.Errorf("module_id %q: want [HOST/]NAMESPACE/NAME/SYSTEM[/VERSION]", clip(s))
	}
	host, err := respond.ParseHostname(respond.HostOnly(parts[0]))
	if err != nil {
		return moduleID{}, fmt.Errorf("module_id %q: %v", clip(s), err)
	}
	m, err := names.ParseModule(parts[1], parts[2], parts[3])
	if err != nil {
		return moduleID{}, fmt.Errorf("module_id %q: %v", clip(s), err)
	}
	id := moduleID{host: host, namespace: m.Namespace, name: m.Name, system: m.System, dir: dir}
	if len(parts) == 5 {
		version = chooseVersion(parts[4], version)
	}
	id.version, err = parseVersion(version)
	return id, err
}

// validDir reports whether dir names a submodule or an example as the
// catalogue's paths do: modules/NAME or examples/NAME, one plain segment
// (the catalogue looks it up among those the module lists).
func validDir(dir string) bool {
	kind, name, ok := strings.Cut(dir, "/")
	if !ok || kind != "modules" && kind != "examples" || name == "" || len(name) > 255 {
		return false
	}
	if name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
		return false
	}
	return !strings.ContainsFunc(name, unicode.IsControl)
}

// chooseVersion is the version a module_id names unless the version
// argument names one.
func chooseVersion(inID, arg string) string {
	if arg != "" {
		return arg
	}
	return inID
}

// looksLikeHost reports whether the first of four parts is a hostname
// (a dot, a port or localhost) rather than a namespace.
func looksLikeHost(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost"
}

// parseProvider reads [HOST/]NAMESPACE/TYPE as tofu does (no host:
// registry.opentofu.org) and the version asked for ("": the newest).
func parseProvider(s, version string) (names.Provider, *names.Version, error) {
	if len(s) > maxAddress {
		return names.Provider{}, nil, fmt.Errorf("provider address is longer than %d bytes", maxAddress)
	}
	if strings.Count(s, "/") == 0 {
		return names.Provider{}, nil, fmt.Errorf("provider %q: want [HOST/]NAMESPACE/TYPE", clip(s))
	}
	p, err := names.ParseProvider(s)
	if err != nil {
		return names.Provider{}, nil, fmt.Errorf("provider %q: want [HOST/]NAMESPACE/TYPE", clip(s))
	}
	v, err := parseVersion(version)
	return p, v, err
}

// parseVersion reads a version argument ("" or "latest": nil).
func parseVersion(s string) (*names.Version, error) {
	if s == "" || s == "latest" {
		return nil, nil
	}
	v, err := names.ParseVersion(s)
	if err != nil {
		return nil, fmt.Errorf("version %q: %v", clip(s), err)
	}
	return &v, nil
}

// providerPath is the catalogue path of p at v (nil: its newest).
func providerPath(p names.Provider, v *names.Version) string {
	s := "providers/" + p.String()
	if v != nil {
		s += "/" + v.String()
	}
	return s
}

// clip is s as an error quotes it: at most 80 bytes.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
