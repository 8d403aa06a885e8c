package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
)

// mirrorModulesHelp is the modules part of `mirror --help`.
const mirrorModulesHelp = `

Modules (see docs/modules.md, "Pull-through" and "Mirroring modules"): with --module-template,
the modules named with --module HOST/NAMESPACE/NAME/SYSTEM[@CONSTRAINT] (every matching
version) and the registry module calls of the configuration in --modules-from DIR (the
newest version each call's constraint accepts, as init picks it) are resolved at their
origin registry, their sources fetched (git over HTTPS, .zip/.tar.gz archives) only from
the registry itself and the hosts given with --module-source, and each packed as 'push
module' packs it. Versions whose tag already holds a module package are skipped.`

// mirrorModuleFlags are mirror's module flags.
func mirrorModuleFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "module-template", Usage: "where modules go: `TEMPLATE` with ${namespace}, ${name}, ${system} (and ${hostname}, the origin's)", EnvVars: []string{"OCI_TOFU_MODULE_TEMPLATE"}},
		&cli.StringSliceFlag{Name: "module", Usage: "mirror every version of a module that matches CONSTRAINT; `ADDRESS[@CONSTRAINT]` is HOST/NAMESPACE/NAME/SYSTEM[@CONSTRAINT] (repeatable)"},
		&cli.StringFlag{Name: "modules-from", Usage: "mirror the registry modules the configuration in `DIR` calls (and its local modules call)"},
		&cli.StringSliceFlag{Name: "module-source", Usage: "allow fetching module sources from `HOST[:PORT]` (repeatable; each module's registry is always allowed)"},
		&cli.StringFlag{Name: "client", Value: "tofu", Usage: "with --modules-from: read the configuration as `tofu` or terraform does (the registry of short addresses)"},
	}
}

// mirrorModuleSpecs reads the modules to mirror (nil when none is asked)
// and where they go.
func mirrorModuleSpecs(c *cli.Context) ([]ingest.ModuleSpec, *repotemplate.Template, error) {
	specs, err := moduleSpecs(c)
	if err != nil || len(specs) == 0 {
		return nil, nil, err
	}
	tpl, err := repotemplate.ParseModuleTemplate(c.String("module-template"))
	if err != nil {
		if c.String("module-template") == "" {
			return nil, nil, usageError(c, "missing --module-template TEMPLATE (where the modules go)")
		}
		return nil, nil, fmt.Errorf("--module-template: %w", err)
	}
	return specs, tpl, nil
}

// moduleSpecs reads --module and --modules-from.
func moduleSpecs(c *cli.Context) ([]ingest.ModuleSpec, error) {
	var specs []ingest.ModuleSpec
	for _, arg := range c.StringSlice("module") {
		s, err := ingest.ParseModuleSpec(arg)
		if err != nil {
			return nil, usageError(c, "--module %s: %v", arg, err)
		}
		specs = append(specs, s)
	}
	if dir := c.String("modules-from"); dir != "" {
		client, err := tfconfig.ParseClient(c.String("client"))
		if err != nil {
			return nil, usageError(c, "--client: %v", err)
		}
		calls, err := tfconfig.RegistryModuleCalls(dir, tfconfig.Options{Client: client})
		if err != nil {
			return nil, err
		}
		specs = append(specs, ingest.CalledModuleSpecs(calls)...)
	}
	return specs, nil
}
