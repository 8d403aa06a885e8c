package main

import (
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/oci-tofu/oci-tofu/convert/report"
)

func outputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
		&cli.BoolFlag{Name: "json", Usage: "print the result as JSON (for CI)"},
	}
}

// newReporter is the command's reporter (convert/report), as --quiet and
// --json ask.
func newReporter(c *cli.Context) *report.Reporter {
	return &report.Reporter{
		Out:   c.App.Writer,
		Err:   c.App.ErrWriter,
		Quiet: c.Bool("quiet"),
		JSON:  c.Bool("json"),
		TTY:   term.IsTerminal(int(os.Stderr.Fd())),
	}
}
