package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func pushProviderCommand() *cli.Command {
	return &cli.Command{
		Name:      "provider",
		Usage:     "verify a provider release directory and push it in OpenTofu's OCI layout",
		ArgsUsage: "DIR REPOSITORY",
		Description: `DIR holds one provider release: terraform-provider-<type>_<version>_<os>_<arch>.zip
files, terraform-provider-<type>_<version>_SHA256SUMS and its detached signature
…_SHA256SUMS.sig, and optionally …_manifest.json.

REPOSITORY is host[:port]/path in a registry, or oci-layout:PATH. The tag is the
version, with '+' written as '_'. Everything is verified before anything is
written, and the tag is written last. A version is written once: other content
under an existing version is refused, naming both digests, unless --replace.
--also-tag writes pointers such as latest, which move to this push.

SHA256SUMS and its signature are judged exactly as OpenTofu 1.12 judges them when it
installs the release from a registry (see docs/artifacts.md): what OpenTofu refuses
(an empty line, "<hex> *<name>" lines for a package, an ASCII-armored or revoked
signature) is refused, with the reason; what OpenTofu installs with a warning (a key,
subkey or signature that has expired) is pushed with a warning, unless
--enforce-gpg-expiration or OPENTOFU_ENFORCE_GPG_EXPIRATION=true.

Each platform's SBOM (SPDX 2.3 JSON, from the Go build information of the
executables in its zip, dated by the SHA256SUMS signature so a re-push makes the
same bytes) is made while the zips upload and stored as a referrer of the
platform's manifest before the tag is written; with --attest-key it is attested
too (predicate type https://spdx.dev/Document: cosign verify-attestation --type
spdxjson). A zip with no executable gets none, with a warning. --no-sbom stores
none; oci-tofu sbom --backfill adds them later.`,
		Flags: append(append([]cli.Flag{
			&cli.StringSliceFlag{Name: "key", Usage: "armored public key `FILE` the SHA256SUMS signature must verify against (repeatable)", EnvVars: []string{"OCI_TOFU_KEYS"}},
			&cli.BoolFlag{Name: "unsigned", Usage: "accept a release without a verified signature (in-house builds); zips are still checked against SHA256SUMS"},
			&cli.StringFlag{Name: "sign-key", Usage: "armored private key `FILE` to create SHA256SUMS and its signature for a release that has none", EnvVars: []string{"OCI_TOFU_SIGN_KEY"}},
			&cli.StringSliceFlag{Name: "platform", Usage: "push only this `os_arch` (repeatable)"},
			enforceExpirationFlag(),
			attestKeyFlag(),
			noSBOMFlag(),
			&cli.StringFlag{Name: "docs", Usage: "the release's documentation, the registry's docs/ tree in `DIR` (index.md, resources/*.md, …), stored as a referrer of the index (not in an OCI layout)"},
			policyAddressFlag("registry.opentofu.org/acme/widgets"),
		}, append(append(gatePolicyFlags(), tagFlags()...), registryFlags()...)...), append(outputFlags(), eventsFlags()...)...),
		Action: withEvents(pushProvider),
	}
}

func pushProvider(c *cli.Context) error {
	if err := wantArgs(c, 2, 2); err != nil {
		return err
	}
	ref, err := repositoryArg(c.Args().Get(1), "the tag is the provider version")
	if err != nil {
		return err
	}
	opts, err := providerReadOptions(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	key, err := keyAttester(c, rep.Infof)
	if err != nil {
		return err
	}
	rel, err := release.ReadProvider(c.Context, c.Args().Get(0), opts)
	if err != nil {
		return err
	}
	publish.ReportRead(rep, rel, opts.Signer)
	if err := policyAllowsPush(c, rep, names.KindProvider, ref, rel.Version); err != nil { // policy_gate.go: before any upload
		return err
	}
	t, tagged, err := pushTarget(c, rep, ref, rel.Version, key)
	if err != nil {
		return err
	}
	var docs providerdocs.Stored
	res, err, attestErr := publish.PushProvider(c.Context, rel, publish.ProviderTarget{Target: t, NoSBOM: c.Bool("no-sbom"), SumsSigner: opts.Signer, Report: rep, DocsDir: c.String("docs"), DocsStored: &docs})
	if err != nil {
		return fmt.Errorf("pushing to %s: %w (the tag %s was not written)", ref.Name(), err, tagged.Reference)
	}
	pushedEvent(c, names.KindProvider, ref, []string{tagged.Reference}, res) // events.go
	if attestErr != nil {
		return attestErr
	}
	return publish.ReportPushed(rep, rel, tagged, res, &docs)
}

// pushTarget opens ref for a push of version: the registry, the tag the
// version gives (tagged), --also-tag, --replace, and key's attestation.
func pushTarget(c *cli.Context, rep *report.Reporter, ref oci.Reference, version string, key *publish.KeyAttester) (t publish.Target, tagged oci.Reference, err error) {
	client, err := registryClient(c)
	if err != nil {
		return t, tagged, err
	}
	repo, err := client.Open(ref)
	if err != nil {
		return t, tagged, err
	}
	if tagged, err = publish.VersionTagged(ref, version); err != nil {
		return t, tagged, err
	}
	also, err := alsoTags(c, tagged.Reference)
	if err != nil {
		return t, tagged, err
	}
	return publish.Target{Repo: repo, Ref: ref, Options: pushOptions(c, rep), Also: also, Attest: key}, tagged, nil
}

// providerReadOptions are the keys, signer and platforms push provider
// reads a release with.
func providerReadOptions(c *cli.Context) (release.Options, error) {
	opts := release.Options{Unsigned: c.Bool("unsigned"), EnforceGPGExpiration: enforceExpiration(c)}
	var err error
	if opts.Keys, err = loadKeyrings(c.StringSlice("key")); err != nil {
		return opts, err
	}
	if f := c.String("sign-key"); f != "" {
		if opts.Signer, err = pgp.LoadSigner(f); err != nil {
			return opts, err
		}
		if opts.SignTime, err = release.SourceDateEpoch(); err != nil {
			return opts, err
		}
	}
	opts.Platforms, err = parsePlatforms(c.StringSlice("platform"))
	return opts, err
}
