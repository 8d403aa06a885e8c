package ingest

import (
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ParseModuleSpec reads HOST/NAMESPACE/NAME/SYSTEM[@CONSTRAINT].
func ParseModuleSpec(s string) (ModuleSpec, error) {
	addr, cons, _ := strings.Cut(s, "@")
	host, mod, ok := tfconfig.ParseRegistrySource(addr, tfconfig.Tofu)
	if !ok || strings.Count(addr, "/") != 3 {
		return ModuleSpec{}, fmt.Errorf("want a module registry address HOST/NAMESPACE/NAME/SYSTEM")
	}
	c, err := names.ParseConstraints(cons)
	if err != nil {
		return ModuleSpec{}, err
	}
	return ModuleSpec{Host: host, Module: mod, Constraints: c}, nil
}

// CalledModuleSpecs are the modules a configuration's calls
// (tfconfig.RegistryModuleCalls) would install: the newest version
// meeting each call's constraints.
func CalledModuleSpecs(calls []tfconfig.ModuleCall) []ModuleSpec {
	var specs []ModuleSpec
	for _, call := range calls {
		specs = append(specs, ModuleSpec{Host: call.Host, Module: call.Module, Constraints: call.Constraints, Newest: true})
	}
	return specs
}
