package names

import (
	"fmt"
	"strings"
)

// Module is a module registry address without its hostname:
// namespace/name/system, lower-case.
type Module struct {
	Namespace, Name, System string
}

func (m Module) String() string { return m.Namespace + "/" + m.Name + "/" + m.System }

// TemplateValues are the repository template placeholders for m on host.
func (m Module) TemplateValues(host string) map[string]string {
	return map[string]string{"hostname": host, "namespace": m.Namespace, "name": m.Name, "system": m.System}
}

var (
	// moduleNameRE is a module namespace or name: letters, digits, and
	// single "-" or "_" inside (OpenTofu's rule, restricted to what a
	// repository path component can hold).
	moduleNameRE = lazyRegexp(`^[a-z0-9]+([_-][a-z0-9]+)*$`)
	// moduleSystemRE is a module's target system, as OpenTofu accepts it.
	moduleSystemRE = lazyRegexp(`^[a-z0-9]{1,64}$`)
)

// ParseModule checks and lower-cases the parts of a module address.
func ParseModule(namespace, name, system string) (Module, error) {
	m := Module{Namespace: strings.ToLower(namespace), Name: strings.ToLower(name), System: strings.ToLower(system)}
	if len(m.Namespace) > 64 || !moduleNameRE().MatchString(m.Namespace) {
		return Module{}, fmt.Errorf("invalid module namespace %q", namespace)
	}
	if len(m.Name) > 64 || !moduleNameRE().MatchString(m.Name) {
		return Module{}, fmt.Errorf("invalid module name %q", name)
	}
	if !moduleSystemRE().MatchString(m.System) {
		return Module{}, fmt.Errorf("invalid module system %q", system)
	}
	return m, nil
}

// ModuleZipName is the file name of a module package download; it ends in
// .zip so that go-getter unpacks it as a zip archive.
func ModuleZipName(m Module, v Version) string {
	return fmt.Sprintf("%s-%s-%s-%s.zip", m.Namespace, m.Name, m.System, v)
}
