// Command oci-tofu keeps OpenTofu and Terraform providers, modules and the
// tofu binary in an OCI registry, and serves them through the standard
// protocols. This package only wires flags to the library packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

func main() {
	// The first SIGINT or SIGTERM cancels ctx: every command stops its
	// reads and writes (a push writes no tag) and exits. A second one
	// ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	app := newApp()
	args := reorderArgs(app, os.Args)
	err := app.RunContext(ctx, args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
		if hint := hint(err, hintContextOfRun(app)); hint != "" {
			fmt.Fprintln(os.Stderr, "hint:", hint)
		}
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

func newApp() *cli.App {
	app := &cli.App{
		Name:    "oci-tofu",
		Usage:   "keep OpenTofu/Terraform providers, modules and tofu releases in an OCI registry",
		Version: version,
		Commands: []*cli.Command{
			{
				Name:  "push",
				Usage: "verify and push artifacts to a registry or OCI layout",
				Subcommands: []*cli.Command{
					pushProviderCommand(),
					pushModuleCommand(),
					pushMirrorCommand(),
					pushTofuCommand(),
				},
			},
			{
				Name:        "pull",
				Usage:       "download artifacts from a registry or OCI layout",
				Subcommands: []*cli.Command{pullModuleCommand()},
			},
			serveCommand(),
			verifyCommand(),
			lockCommand(),
			exportCommand(),
			mirrorCommand(),
			pruneCommand(),
			sbomCommand(),
			showCommand(),
			mcpCommand(),
			vulnsCommand(),
			usageCommand(),
			policyCommand(),
		},
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // main prints and exits
	}
	configureCLI(app)
	return app
}
