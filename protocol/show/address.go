package show

import (
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Address is an ADDRESS[@VERSION] argument: a provider or a module, and
// the version asked for (nil: the newest served).
type Address struct {
	Provider *names.Provider
	Module   *source.ModuleAddress
	Version  *names.Version
}

// What names the address as errors and the text name it: "provider
// HOST/NAMESPACE/TYPE" or "module HOST/NAMESPACE/NAME/SYSTEM", with
// @VERSION when one is asked for.
func (a Address) What() string {
	s := ""
	if a.Provider != nil {
		s = "provider " + a.Provider.String()
	} else {
		s = "module " + a.Module.String()
	}
	if a.Version != nil {
		s += "@" + a.Version.String()
	}
	return s
}

// addressForms is what a bad address is told to look like.
const addressForms = "want [HOST/]NAMESPACE/TYPE (a provider) or [HOST/]NAMESPACE/NAME/SYSTEM (a module), optionally module: or provider: before it and @VERSION after it"

// ParseAddress reads arg as policy test reads an address: four parts or
// a "module:" prefix are a module ([HOST/]NAMESPACE/NAME/SYSTEM, on
// registry.opentofu.org without HOST), two or three parts (or a
// "provider:" prefix) a provider ([HOST/]NAMESPACE/TYPE); three parts
// are a module when modulesOnly (only a module template is given).
// @VERSION, if any, is a semantic version.
func ParseAddress(arg string, modulesOnly bool) (Address, error) {
	addr, version, hasVersion := strings.Cut(arg, "@")
	var a Address
	if hasVersion {
		v, err := names.ParseVersion(version)
		if err != nil {
			return a, fmt.Errorf("address %q: version %q: %v", arg, version, err)
		}
		a.Version = &v
	}
	module, err := isModule(addr, modulesOnly)
	if err != nil {
		return a, fmt.Errorf("address %q: %v; %s", arg, err, addressForms)
	}
	addr = strings.TrimPrefix(strings.TrimPrefix(addr, "module:"), "provider:")
	if module {
		m, err := parseModule(addr)
		if err != nil {
			return a, fmt.Errorf("address %q: %v; %s", arg, err, addressForms)
		}
		a.Module = &m
		return a, nil
	}
	p, err := names.ParseProvider(addr)
	if err != nil || strings.Count(addr, "/") == 0 {
		return a, fmt.Errorf("address %q: not a provider address; %s", arg, addressForms)
	}
	a.Provider = &p
	return a, nil
}

// isModule says whether addr names a module.
func isModule(addr string, modulesOnly bool) (bool, error) {
	parts := strings.Count(addr, "/") + 1
	switch {
	case strings.HasPrefix(addr, "module:"):
		return true, nil
	case strings.HasPrefix(addr, "provider:"):
		return false, nil
	case parts == 4:
		return true, nil
	case parts == 3:
		return modulesOnly, nil
	case parts == 2:
		return false, nil
	}
	return false, fmt.Errorf("it has %d part(s)", parts)
}

// parseModule reads [HOST/]NAMESPACE/NAME/SYSTEM.
func parseModule(addr string) (source.ModuleAddress, error) {
	parts := strings.Split(strings.ToLower(addr), "/")
	if len(parts) == 3 {
		parts = append([]string{names.OpenTofuRegistryHost}, parts...)
	}
	if len(parts) != 4 {
		return source.ModuleAddress{}, fmt.Errorf("a module address has three or four parts")
	}
	if !names.ValidHostname(parts[0]) {
		return source.ModuleAddress{}, fmt.Errorf("invalid hostname %q", parts[0])
	}
	m, err := names.ParseModule(parts[1], parts[2], parts[3])
	if err != nil {
		return source.ModuleAddress{}, err
	}
	return source.ModuleAddress{Host: parts[0], Module: m}, nil
}
