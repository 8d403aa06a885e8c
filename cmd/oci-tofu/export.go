package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/providerdir"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write providers from the registry into a `providers mirror` directory",
		ArgsUsage: "DIR ADDRESS[@CONSTRAINT]...",
		Description: `Writes every version matching each constraint (all released versions when none is
given) into DIR in the packed layout that tofu providers mirror writes: zips, <version>.json
with h1 and zh hashes, and index.json. DIR then works as a static network mirror or a
filesystem_mirror for hosts without a registry.`,
		Flags: append([]cli.Flag{
			providerTemplateFlag(),
			&cli.StringSliceFlag{Name: "platform", Usage: "export only this `os_arch` (repeatable)"},
		}, append(registryFlags(), outputFlags()...)...),
		Action: export,
	}
}

func export(c *cli.Context) error {
	if err := wantArgs(c, 2, -1); err != nil {
		return err
	}
	tpl, err := repotemplate.ParseProviderTemplate(c.String("provider-template"))
	if err != nil {
		return fmt.Errorf("--provider-template: %w", err)
	}
	var opts providerdir.Options
	if opts.Platforms, err = parsePlatforms(c.StringSlice("platform")); err != nil {
		return err
	}
	specs, refs, err := exportSpecs(c, tpl)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	rep, dir, count := newReporter(c), c.Args().First(), 0
	for i, spec := range specs {
		vs, err := exportProvider(c, client, spec, refs[i], dir, opts)
		if err != nil {
			return err
		}
		rep.Infof("%s: exported %s", spec.Provider, vs)
		count += len(vs)
	}
	return rep.Result(map[string]any{"dir": dir, "versions": count}, fmt.Sprintf("exported %s to %s", names.Plural(count, "provider version"), dir))
}

// exportSpecs are the ADDRESS[@CONSTRAINT] arguments and the repositories
// tpl maps them to: the whole command line is checked
// before anything is exported.
func exportSpecs(c *cli.Context, tpl *repotemplate.Template) ([]names.ProviderSpec, []oci.Reference, error) {
	var err error
	specs := make([]names.ProviderSpec, c.NArg()-1)
	refs := make([]oci.Reference, len(specs))
	for i, arg := range c.Args().Tail() {
		if specs[i], err = names.ParseProviderSpec(arg); err != nil {
			return nil, nil, usageError(c, "%v", err)
		}
		if refs[i], err = tpl.Expand(specs[i].Provider.TemplateValues()); err != nil {
			return nil, nil, fmt.Errorf("%s: --provider-template: %w", specs[i].Provider, err)
		}
	}
	return specs, refs, nil
}

// exportProvider writes the versions of ref matching spec into dir
// (providerdir.ExportMatching).
func exportProvider(c *cli.Context, client *oci.Client, spec names.ProviderSpec, ref oci.Reference, dir string, opts providerdir.Options) ([]names.Version, error) {
	repo, err := client.OpenReadOnly(c.Context, ref)
	if err != nil {
		return nil, err
	}
	return providerdir.ExportMatching(c.Context, repo, spec, ref, dir, opts)
}
