package main

import (
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "write a complete multi-platform .terraform.lock.hcl from registry metadata",
		ArgsUsage: "[DIR]",
		Description: `Reads the configuration in DIR (default: the current directory) as tofu init reads
it: the root module, every local module it calls, and the modules tofu init (or tofu get)
already installed under .terraform/modules; the providers required_providers declares and
those that resources, data sources and provider blocks imply, with the constraints of every
module combined. Chooses versions as tofu does (a version in .terraform.lock.hcl that still
meets the constraints is kept; tags are read as tofu's oci_mirror reads them), and writes
the h1 of every --platform's package and a zh for every line of the publisher's signed
SHA256SUMS, without downloading zips (zips are downloaded only for artifacts that lack a
stored h1). tofu init then accepts the file without changing it.

--for terraform keys short addresses ("acme/widgets") on registry.terraform.io, reads
only .tf files and writes Terraform's header; by default the client is detected from the
existing lock file, .tofu files or the provider cache, and is tofu otherwise.

With --policy, versions the policy denies are not chosen, as a proxy serving
with the same policy leaves them out of its listings; the policy matches a provider by its
address with the hostname's port removed (localhost/acme/widgets for localhost:8443/…).`,
		Flags: append([]cli.Flag{
			providerTemplateFlag(),
			&cli.StringSliceFlag{Name: "platform", Usage: "lock for this `os_arch` (repeatable)", Required: true},
			&cli.StringFlag{Name: "for", Usage: "the client the lock file is for: `tofu or terraform` (default: detected, else tofu)"},
			&cli.BoolFlag{Name: "no-download", Usage: "fail rather than download a zip whose h1 is not stored"},
			&cli.StringFlag{Name: "policy", Usage: "lock only versions the policy `FILE` allows, as a proxy serving with it offers (docs/policy.md)", EnvVars: []string{"OCI_TOFU_POLICY"}},
		}, append(registryFlags(), outputFlags()...)...),
		Action: lock,
	}
}

// lockClient is the client given with --for, or the one detected in dir.
func lockClient(c *cli.Context, dir string) (tfconfig.Client, string, error) {
	if s := c.String("for"); s != "" {
		client, err := tfconfig.ParseClient(s)
		return client, "--for", err
	}
	client, why := tfconfig.DetectClient(dir)
	return client, why, nil
}

func lock(c *cli.Context) error {
	dir := "."
	if err := wantArgs(c, 0, 1); err != nil {
		return err
	}
	if c.NArg() == 1 {
		dir = c.Args().First()
	}
	opts, err := lockOptions(c)
	if err != nil {
		return err
	}
	client, why, err := lockClient(c, dir)
	if err != nil {
		return err
	}
	opts.Client = client
	cfg, err := tfconfig.Load(dir, tfconfig.Options{Client: client})
	if err != nil {
		return err
	}
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	existing, err := lockfile.ReadExisting(lockPath)
	if err != nil {
		return err
	}
	registry, err := registryClient(c)
	if err != nil {
		return err
	}
	opts.Open = registry.OpenReadOnly
	if opts.Policy, err = readGatePolicy(c); err != nil { // gate.go
		return err
	}
	return writeLock(c, cfg, existing, lockPath, opts, why)
}

// writeLock locks cfg's requirements (keeping what existing locks that
// still meets them), writes the lock file at lockPath and reports it.
func writeLock(c *cli.Context, cfg *tfconfig.Config, existing *lockfile.File, lockPath string, opts lockfile.Options, why string) error {
	lf, err := lockfile.Lock(c.Context, cfg.Requirements, existing, opts)
	if err != nil {
		return err
	}
	if err := localfile.WriteAtomic(lockPath, lf.Bytes()); err != nil {
		return err
	}
	return lf.Report(newReporter(c), lockPath, opts.Client, why, cfg)
}

// lockOptions reads --provider-template, --platform (each once) and
// --no-download.
func lockOptions(c *cli.Context) (lockfile.Options, error) {
	tpl, err := repotemplate.ParseProviderTemplate(c.String("provider-template"))
	if err != nil {
		return lockfile.Options{}, err
	}
	platforms, err := parsePlatforms(c.StringSlice("platform"))
	if err != nil {
		return lockfile.Options{}, err
	}
	var once []names.Platform
	for _, p := range platforms {
		if !slices.Contains(once, p) {
			once = append(once, p)
		}
	}
	return lockfile.Options{Template: tpl, Platforms: once, NoDownload: c.Bool("no-download")}, nil
}
