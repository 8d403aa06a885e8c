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
Exit status 1 when anything would make OpenTofu fail.

With --attest-pub, every artifact checked must also carry a signature and an
attestation by each key given, as push --attest-key writes them and as cosign
verify and cosign verify-attestation check them; one missing or not verifying is
an error (exit status 1). --attest-pub keyless:ISSUER=IDENTITY (with --trusted-root
FILE) requires instead a keyless attestation by that OIDC identity: a Sigstore bundle
stored as a referrer, as cosign attest stores it without a key, checked offline.`,
		Flags: append(append([]cli.Flag{
			&cli.BoolFlag{Name: "skip-zips", Usage: "check manifests only; do not download zips"},
			attestPubFlag(), verifyTrustedRootFlag(),
		}, registryFlags()...), outputFlags()...),
		Action: verify,
	}
}

func verify(c *cli.Context) error {
	if err := wantArgs(c, 1, -1); err != nil {
		return err
	}
	refs := make([]oci.Reference, c.NArg())
	for i, arg := range c.Args().Slice() {
		var err error
		if refs[i], err = oci.ParseReference(arg); err != nil {
			return usageError(c, "%v", err)
		}
	}
	keys, err := attestPublicKeys(c)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	_, identities := splitKeyless(c.StringSlice("attest-pub"))
	keylessIDs, err := keylessChecks(c.String("trusted-root"), identities) // keyless.go
	if err != nil {
		return err
	}
	opts := lint.Options{SkipZips: c.Bool("skip-zips"), AttestKeys: keys, Keyless: keylessIDs}
	var all []lint.Finding
	for _, ref := range refs {
		repo, err := client.OpenReadOnly(c.Context, ref)
		var findings []lint.Finding
		if err == nil {
			findings, err = lint.Check(c.Context, repo, ref, opts)
		}
		if err != nil && !oci.IsContentProblem(err) {
			// Not reaching the registry says nothing about the artifacts.
			return fmt.Errorf("%s: %w", ref, err)
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
		if len(keys) > 0 {
			return cli.Exit(fmt.Sprintf("%s (OpenTofu would fail on them, or a signature or attestation is missing or does not verify)", plural(failed, "problem")), 1)
		}
		return cli.Exit(fmt.Sprintf("%s OpenTofu would fail on", plural(failed, "problem")), 1)
	}
	return nil
}
