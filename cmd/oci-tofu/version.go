package main

import "github.com/urfave/cli/v2"

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// versionCommand is `oci-tofu version`, as `oci-tofu --version`.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:   "version",
		Usage:  "print the version",
		Action: printVersion,
	}
}

func printVersion(c *cli.Context) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	cli.ShowVersion(c)
	return nil
}
