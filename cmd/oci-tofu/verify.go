package main

import (
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
an error (exit status 1). With --notation, every artifact checked must also carry
a Notary Project signature passing the trust policy and trust store of each
notation configuration directory given.
--attest-pub keyless:ISSUER=IDENTITY (with --trusted-root FILE) requires instead a
keyless attestation by that OIDC identity: a Sigstore bundle stored as a referrer, as
cosign attest stores it without a key, checked offline.

With --policy, each version tag also gets the policy's decision, naming the
rule; a version it denies is an error. The policy matches a provider as
registry.opentofu.org/NAMESPACE/TYPE and a module as registry.opentofu.org/NAMESPACE/NAME/SYSTEM,
from the repository path's last segments (patterns like */acme/* match them).`,
		Flags: append(append([]cli.Flag{
			&cli.BoolFlag{Name: "skip-zips", Usage: "check manifests only; do not download zips"},
			attestPubFlag(), verifyTrustedRootFlag(),
			&cli.StringSliceFlag{Name: "notation", Usage: "notation configuration `DIR` (trustpolicy.oci.json or trustpolicy.json, truststore/x509/…) whose trust policy every artifact checked must pass with a Notary Project signature (repeatable: each must)", EnvVars: []string{"OCI_TOFU_NOTATION"}},
			&cli.StringFlag{Name: "policy", Usage: "also report the policy `FILE`'s decision on each version tag; a denied one is an error (docs/policy.md)", EnvVars: []string{"OCI_TOFU_POLICY"}},
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
	opts, err := verifyOptions(c)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	if opts.Policy, err = readGatePolicy(c); err != nil { // gate.go
		return err
	}
	all, err := lint.CheckAll(c.Context, client.OpenReadOnly, refs, opts)
	if err != nil {
		return err
	}
	if failure := lint.Report(rep, all, opts); failure != "" {
		return cli.Exit(failure, 1)
	}
	return nil
}

// verifyOptions are the checks verify's flags ask for: --skip-zips,
// --attest-pub's keys and keyless identities, --notation's trust policies.
func verifyOptions(c *cli.Context) (lint.Options, error) {
	keys, err := attestPublicKeys(c)
	if err != nil {
		return lint.Options{}, err
	}
	trusts, err := notationTrusts(c, "notation")
	if err != nil {
		return lint.Options{}, err
	}
	_, identities := splitKeyless(c.StringSlice("attest-pub"))
	keyless, err := keylessChecks(c.String("trusted-root"), identities) // keyless.go
	return lint.Options{SkipZips: c.Bool("skip-zips"), AttestKeys: keys, Trusts: trusts, Keyless: keyless}, err
}
