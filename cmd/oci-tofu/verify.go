package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/lint"
	"github.com/oci-tofu/oci-tofu/oci"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check artifacts exactly as OpenTofu would read them",
		ArgsUsage: "REFERENCE...",
		Description: `Each REFERENCE is host[:port]/repo[:tag|@digest] or oci-layout:PATH[:tag]; without a
tag every tag of the repository is checked. Checks: media types, artifactType on
descriptors and bodies, platforms and duplicates, a single archive/zip layer, version
tags, the 4 MiB manifest limit, zips readable with matching digests, and the oci-tofu
provenance (SHA256SUMS, signature, h1) when present, judged as OpenTofu 1.12 judges them.

Errors are what would make OpenTofu fail; the rest are warnings. Tags are read as
OpenTofu's oci_mirror reads them: tags that are not versions (latest, v1.2.3) are
ignored, so they and what they point to get warnings only; a tag like 1.2 is listed as
version 1.2.0, and is an error only when there is no tag 1.2.0 for OpenTofu to resolve.
Exit status 1 when anything would make OpenTofu fail.`,
		Flags: append(append([]cli.Flag{
			&cli.BoolFlag{Name: "skip-zips", Usage: "check manifests only; do not download zips"},
		}, registryFlags()...), outputFlags()...),
		Action: verify,
	}
}

func verify(c *cli.Context) error {
	if c.NArg() == 0 {
		return checkArgs(c, 1, "verify [flags] REFERENCE...")
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	var all []lint.Finding
	for _, arg := range c.Args().Slice() {
		ref, err := oci.ParseReference(arg)
		if err != nil {
			return err
		}
		repo, err := client.OpenReadOnly(c.Context, ref)
		var findings []lint.Finding
		if err == nil {
			findings, err = lint.Check(c.Context, repo, ref, lint.Options{SkipZips: c.Bool("skip-zips")})
		}
		if err != nil {
			findings = append(findings, lint.Finding{Reference: ref.String(), Severity: lint.SeverityError, Message: err.Error()})
		}
		all = append(all, findings...)
	}
	failed := 0
	for _, f := range all {
		if f.Severity == lint.SeverityError {
			failed++
		}
	}
	if rep.json {
		if all == nil {
			all = []lint.Finding{}
		}
		b, _ := json.MarshalIndent(map[string]any{"ok": failed == 0, "findings": all}, "", "  ")
		fmt.Fprintln(rep.out, string(b))
	} else if !rep.quiet {
		for _, f := range all {
			fmt.Fprintf(rep.out, "%-7s %s: %s\n", f.Severity, f.Reference, f.Message)
		}
	}
	if failed > 0 {
		return cli.Exit(fmt.Sprintf("%d problem(s) OpenTofu would fail on", failed), 1)
	}
	return nil
}
