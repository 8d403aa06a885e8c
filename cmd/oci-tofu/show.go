package main

import (
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/protocol/show"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a module package's interface, or an address's catalogue page",
		ArgsUsage: "REPOSITORY[:TAG|@DIGEST] | ADDRESS[@VERSION] (with a template)",
		Description: `Without a template, prints the interface stored beside the module package
REPOSITORY names (push module, mirror and pull-through store it): each module's
inputs, outputs, providers, module calls and resources, for the root module, each
submodule and each example; a package without one is downloaded, verified and read
now, and the output says so. The tag defaults to latest, as OpenTofu's.

With --provider-template or --module-template, the argument is an ADDRESS, read as
policy test reads one: [HOST/]NAMESPACE/TYPE a provider, [HOST/]NAMESPACE/NAME/SYSTEM
a module (three parts are a provider when --provider-template is given; write
module:NAMESPACE/NAME/SYSTEM then); HOST defaults to registry.opentofu.org. It prints
what the catalogue's page of that address says (docs/catalogue.md), built by the same
code as serve's: the versions, newest first, with the policy's status (served,
deprecated, warned, denied, revoked, with rule and reason), and of VERSION (default:
the newest served, ignoring tags that are no version) a provider's platforms,
protocols, packages with their zip digests and h1/zh hashes, publisher keys, SBOMs,
and the known vulnerabilities --vuln-db finds; a module's root interface. --json
prints the catalogue's JSON document.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "provider-template", Usage: "read ADDRESS as a provider in the repository `TEMPLATE` gives (${hostname}, ${namespace}, ${type})"},
			&cli.StringFlag{Name: "module-template", Usage: "read ADDRESS as a module in the repository `TEMPLATE` gives (${namespace}, ${name}, ${system}, ${hostname})"},
			&cli.StringFlag{Name: "policy", Usage: "judge ADDRESS's versions by the policy `FILE`, as serve does (docs/policy.md)"},
			&cli.StringFlag{Name: "vuln-db", Usage: "match a provider version's stored SBOMs against the vulnerability database `DIR` (as vulns reads it)"},
		}, append(registryFlags(), outputFlags()...)...),
		Action: runShow,
	}
}

func runShow(c *cli.Context) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	shown, err := show.Show(c.Context, c.Args().First(), show.Options{Client: client, ProviderTemplate: c.String("provider-template"), ModuleTemplate: c.String("module-template"),
		Policy: c.String("policy"), VulnDB: c.String("vuln-db"), Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	return shown.Report(newReporter(c))
}
