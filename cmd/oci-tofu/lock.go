package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func providerTemplateFlag() cli.Flag {
	return &cli.StringFlag{
		Name:     "provider-template",
		Usage:    "where providers live, as tofu's repository_template: e.g. `ghcr.io/acme/providers/${namespace}/${type}` or oci-layout:DIR/${namespace}/${type}",
		EnvVars:  []string{"OCI_TOFU_PROVIDER_TEMPLATE"},
		Required: true,
	}
}

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "write a complete multi-platform .terraform.lock.hcl from registry metadata",
		ArgsUsage: "[DIR]",
		Description: `Reads required_providers from the configuration in DIR (default: the current
directory) and its .terraform.lock.hcl, chooses versions as tofu does (a locked version
that still meets the constraints is kept), and writes h1 and zh hashes for every
--platform without downloading zips (zips are downloaded only for artifacts that lack a
stored h1). tofu init then accepts the file without changing it.`,
		Flags: append([]cli.Flag{
			providerTemplateFlag(),
			&cli.StringSliceFlag{Name: "platform", Usage: "lock for this `os_arch` (repeatable)", Required: true},
			&cli.BoolFlag{Name: "no-download", Usage: "fail rather than download a zip whose h1 is not stored"},
		}, append(registryFlags(), outputFlags()...)...),
		Action: lock,
	}
}

func lock(c *cli.Context) error {
	dir := "."
	if c.NArg() > 1 {
		return checkArgs(c, 1, "lock [flags] [DIR]")
	} else if c.NArg() == 1 {
		dir = c.Args().First()
	}
	tpl, err := oci.ParseProviderTemplate(c.String("provider-template"))
	if err != nil {
		return err
	}
	var platforms []names.Platform
	for _, p := range c.StringSlice("platform") {
		pl, err := names.ParsePlatform(p)
		if err != nil {
			return err
		}
		platforms = append(platforms, pl)
	}
	reqs, err := tfconfig.RequiredProviders(dir)
	if err != nil {
		return err
	}
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	existing, err := lockfile.Read(lockPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	lf, err := lockfile.Lock(c.Context, reqs, existing, lockfile.Options{
		Template: tpl,
		Open: func(ctx context.Context, ref oci.Reference) (oci.ReadOnlyRepository, error) {
			return client.OpenReadOnly(ctx, ref)
		},
		Platforms:  platforms,
		NoDownload: c.Bool("no-download"),
	})
	if err != nil {
		return err
	}
	if err := localfile.WriteAtomic(lockPath, lf.Bytes()); err != nil {
		return err
	}
	rep := newReporter(c)
	var lines []string
	for _, p := range lf.Providers {
		lines = append(lines, fmt.Sprintf("%s %s (%d hashes)", p.Address, p.Version, len(p.Hashes)))
	}
	human := fmt.Sprintf("wrote %s:", lockPath)
	for _, l := range lines {
		human += "\n  " + l
	}
	return rep.result(map[string]any{"lock_file": lockPath, "providers": lf.Providers}, human)
}
