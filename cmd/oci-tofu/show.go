package main

import (
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a module package's interface: inputs, outputs, providers, resources",
		ArgsUsage: "REPOSITORY[:TAG|@DIGEST]",
		Description: `Prints the interface stored beside the module package (push module, mirror and
pull-through store it): each module's inputs (name, type, default, required),
outputs, providers, module calls and resources, for the root module, each
submodule and each example; --json prints the whole document. A package
without one (pushed by another tool) is downloaded, verified and read now, and
the output says so. The tag defaults to latest, as OpenTofu's.`,
		Flags:  append(registryFlags(), outputFlags()...),
		Action: show,
	}
}

func show(c *cli.Context) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	ref, err := oci.ParseReference(c.Args().First())
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	repo, err := client.OpenReadOnly(c.Context, ref)
	if err != nil {
		return err
	}
	shown, err := moduledoc.Show(c.Context, repo, ref)
	if err != nil {
		return err
	}
	return shown.Report(newReporter(c))
}
