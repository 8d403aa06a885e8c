package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

func mirrorCommand() *cli.Command {
	return &cli.Command{
		Name:      "mirror",
		Usage:     "copy verified provider releases from their origin registries into OCI",
		ArgsUsage: "ADDRESS[@CONSTRAINT]...",
		Description: `Resolves each provider through its origin registry (service discovery and the Provider
Registry Protocol; credentials from TF_TOKEN_<host>), selects every version meeting the
constraint (all released versions when none is given), downloads each platform's zip,
SHA256SUMS and signature, verifies them against the registry's signing keys as tofu
does, and pushes them with provenance. Versions already complete in the target are
skipped without downloading. With --lockfile, exactly the locked versions are mirrored and
any zip whose zh: is not in the lock is refused. One provider failing does not stop the
others; the exit status is 1 if any failed.`,
		Flags: append([]cli.Flag{
			providerTemplateFlag(),
			&cli.StringSliceFlag{Name: "platform", Usage: "mirror only this `os_arch` (repeatable; default: every platform offered)"},
			&cli.StringFlag{Name: "lockfile", Usage: "mirror the versions locked in this .terraform.lock.hcl `FILE`; refuse zips whose zh: it lacks"},
		}, append(registryFlags(), outputFlags()...)...),
		Action: mirror,
	}
}

func mirror(c *cli.Context) error {
	tpl, err := oci.ParseProviderTemplate(c.String("provider-template"))
	if err != nil {
		return err
	}
	opts := origin.MirrorOptions{Template: tpl}
	for _, p := range c.StringSlice("platform") {
		pl, err := oci.ParsePlatform(p)
		if err != nil {
			return err
		}
		opts.Platforms = append(opts.Platforms, pl)
	}
	var specs []convert.ProviderSpec
	if f := c.String("lockfile"); f != "" {
		if opts.Lock, err = convert.ReadLockFile(f); err != nil {
			return err
		}
		if c.NArg() == 0 {
			for _, p := range opts.Lock.Providers {
				a, err := convert.ParseProviderAddr(p.Address)
				if err != nil {
					return err
				}
				specs = append(specs, convert.ProviderSpec{Addr: a})
			}
		}
	}
	for _, arg := range c.Args().Slice() {
		s, err := convert.ParseProviderSpec(arg)
		if err != nil {
			return err
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		return checkArgs(c, 1, "mirror [flags] ADDRESS[@CONSTRAINT]...")
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	opts.Open = client.Open
	transport, err := oci.NewTransport(oci.Options{CAFile: c.String("ca-file")})
	if err != nil {
		return err
	}
	rep := newReporter(c)
	opts.Log = rep.infof
	results := origin.Mirror(c.Context, origin.NewClient(transport), specs, opts)
	failed := 0
	for _, r := range results {
		if r.Error != "" {
			failed++
		}
	}
	if rep.json {
		rep.result(map[string]any{"ok": failed == 0, "results": results}, "")
	} else if !rep.quiet {
		for _, r := range results {
			switch {
			case r.Error != "":
				fmt.Fprintf(rep.out, "FAILED   %s %s: %s\n", r.Provider, r.Version, r.Error)
			case r.Skipped:
				fmt.Fprintf(rep.out, "complete %s %s (%s)\n", r.Provider, r.Version, r.Digest)
			default:
				fmt.Fprintf(rep.out, "mirrored %s %s → %s@%s\n", r.Provider, r.Version, r.Reference, r.Digest)
			}
		}
	}
	if failed > 0 {
		return cli.Exit(fmt.Sprintf("%d of %d failed", failed, len(results)), 1)
	}
	return nil
}
