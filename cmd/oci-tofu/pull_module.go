package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/oci"
)

func pullModuleCommand() *cli.Command {
	return &cli.Command{
		Name:      "module",
		Usage:     "download an OpenTofu oci:// module package and unpack it",
		ArgsUsage: "REPOSITORY[:TAG|@DIGEST] DIR",
		Description: `Resolves the tag (default latest, as OpenTofu does) or digest, checks the
manifest as OpenTofu does, downloads the zip to a temporary file verifying its
digest, then unpacks it into DIR, which must not exist or be empty. Entries
that would land outside DIR, absolute paths and symbolic links are refused;
nothing appears in DIR unless everything was verified and unpacked.`,
		Flags: append(append([]cli.Flag{
			&cli.Int64Flag{Name: "max-size", Value: modulepkg.MaxSize, Usage: "refuse packages larger than this many `BYTES`, packed or unpacked"},
		}, registryFlags()...), outputFlags()...),
		Action: pullModule,
	}
}

// pullModuleArgs are the reference (latest when it names no tag or
// digest), the directory and --max-size.
func pullModuleArgs(c *cli.Context) (oci.Reference, string, int64, error) {
	if err := wantArgs(c, 2, 2); err != nil {
		return oci.Reference{}, "", 0, err
	}
	ref, err := oci.ParseReference(c.Args().Get(0))
	if err != nil {
		return oci.Reference{}, "", 0, err
	}
	if ref.Reference == "" {
		ref.Reference = "latest"
	}
	if c.Int64("max-size") <= 0 {
		return oci.Reference{}, "", 0, fmt.Errorf("--max-size must be positive")
	}
	return ref, c.Args().Get(1), c.Int64("max-size"), nil
}

func pullModule(c *cli.Context) error {
	ref, dir, maxSize, err := pullModuleArgs(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	repo, err := client.OpenReadOnly(c.Context, ref)
	if err != nil {
		return err
	}
	pulled, err := modulepkg.Pull(c.Context, repo, ref, dir, maxSize)
	if err != nil {
		return err
	}
	return pulled.Report(rep)
}
