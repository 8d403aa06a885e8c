package main

import (
	"fmt"

	"github.com/opentofu/tofudl/branding"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/events/cliemit"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

func mirrorCommand() *cli.Command {
	return &cli.Command{
		Name:      "mirror",
		Usage:     "copy verified provider and OpenTofu releases from their origins into OCI",
		ArgsUsage: "ADDRESS[@CONSTRAINT]...",
		Description: `Resolves each provider through its origin registry (service discovery and the Provider
Registry Protocol; credentials from TF_TOKEN_<host>), selects every version meeting the
constraint (all released versions when none is given), downloads each platform's zip,
SHA256SUMS and signature, verifies them against the registry's signing keys as tofu
does, and pushes them with provenance. Versions already complete in the target are
skipped without downloading. With --lockfile, exactly the locked versions are mirrored
and any zip whose zh: is not in the lock is refused. One provider failing does not stop
the others; the exit status is 1 if any failed.

Signatures and SHA256SUMS are judged exactly as OpenTofu 1.12 judges them (see
docs/artifacts.md): what tofu refuses is refused, with the reason; a release signed by
an expired key, subkey or signature is mirrored with a warning, unless
--enforce-gpg-expiration or OPENTOFU_ENFORCE_GPG_EXPIRATION=true. Each result carries the
warnings its stored signature and SHA256SUMS give (also for versions already complete).

With --tofu-repository, OpenTofu releases are mirrored too, from a TofuDL-compatible API
(OpenTofu's by default): the versions matching --tofu-versions (default: the newest
stable), each release's files (only those of --platform when given), verified against
OpenTofu's signing key (or --tofu-key) and SHA256SUMS, one artifact per version.

With --policy, versions the policy denies are left out before anything of
them is downloaded and reported as denied, naming the rule (a locked version it denies
fails); with --policy-warn they are mirrored with a warning naming the rule.

With --attest-key, each release mirrored is signed and attested as push provider and
push tofu attest it (docs/artifacts.md). A release already complete that this key has
not attested is not skipped: it is downloaded and verified from its origin again, found
up to date, and attested; one it has attested is skipped as before.` + mirrorModulesHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "provider-template", Usage: "where providers go, as tofu's repository_template: e.g. `ghcr.io/acme/providers/${namespace}/${type}`", EnvVars: []string{"OCI_TOFU_PROVIDER_TEMPLATE"}},
			&cli.StringSliceFlag{Name: "platform", Usage: "mirror only this `os_arch` (repeatable; default: every platform offered)"},
			&cli.StringFlag{Name: "lockfile", Usage: "mirror the versions locked in this .terraform.lock.hcl `FILE`; refuse zips whose zh: it lacks"},
			&cli.StringFlag{Name: "tofu-repository", Usage: "also mirror OpenTofu releases from a TofuDL API into this `REPOSITORY`", EnvVars: []string{"OCI_TOFU_TOFU_REPOSITORY"}},
			&cli.StringFlag{Name: "tofu-versions", Usage: "OpenTofu versions to mirror, as a `CONSTRAINT` (default: the newest stable)"},
			&cli.StringFlag{Name: "tofu-api-url", Value: branding.DefaultDownloadAPIURL, Usage: "TofuDL api.json `URL`", EnvVars: []string{"OCI_TOFU_TOFU_API_URL"}},
			&cli.StringFlag{Name: "tofu-download-url", Value: branding.DefaultMirrorURLTemplate, Usage: "download URL `TEMPLATE` with {{ .Version }} and {{ .Artifact }}", EnvVars: []string{"OCI_TOFU_TOFU_DOWNLOAD_URL"}},
			&cli.StringSliceFlag{Name: "tofu-key", Usage: "armored public key `FILE` for OpenTofu releases instead of OpenTofu's (repeatable)"},
			enforceExpirationFlag(),
			attestKeyFlag(),
		}, append(append(append(append(gatePolicyFlags(), mirrorModuleFlags()...), registryFlags()...), outputFlags()...), eventsFlags()...)...),
		Action: withEvents(runMirror),
	}
}

func runMirror(c *cli.Context) error {
	modules, modTpl, err := mirrorModuleSpecs(c) // mirror_modules.go
	if err != nil {
		return err
	}
	opts, specs, err := mirrorProviderOptions(c, len(modules) > 0)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	transport, err := oci.NewTransport(oci.Options{CAFile: c.String("ca-file")})
	if err != nil {
		return err
	}
	origins := origin.NewClient(transport)
	rep := newReporter(c)
	m := ingest.Mirror{Providers: specs, Modules: modules}
	if opts, err = mirrorGuards(c, rep, opts); err != nil {
		return err
	}
	if repo := c.String("tofu-repository"); repo != "" { // read in full before anything is mirrored
		if m.Tofu, err = tofuMirrorOptions(c, rep, client, repo, opts); err != nil {
			return err
		}
	}
	m.ModuleOptions = ingest.ModuleOptions{Template: modTpl, Client: client,
		Sources: c.StringSlice("module-source"), Transport: transport, Attest: opts.Attest, Gate: opts.Gate, Log: rep.Infof}
	opts.Open, opts.Log = client.Open, rep.Infof
	m.ProviderOptions = opts
	results := m.Run(c.Context, origins)
	cliemit.From(c.Context).Mirrored(results)
	if failed := ingest.Report(rep, results); failed > 0 {
		return cli.Exit(fmt.Sprintf("%d of %d failed", failed, len(results)), 1)
	}
	return nil
}

// mirrorGuards are opts with --attest-key's attestation and --policy's
// gate, for every release mirrored.
func mirrorGuards(c *cli.Context, rep *report.Reporter, opts ingest.ProviderOptions) (ingest.ProviderOptions, error) {
	att, err := ingestAttestation(c, rep.Infof) // attest.go
	if err != nil {
		return opts, err
	}
	opts.Attest = att
	pol, err := readGatePolicy(c) // policy_gate.go
	if err != nil {
		return opts, err
	}
	opts.Gate = ingest.Gate{Policy: pol, WarnOnly: c.Bool("policy-warn")}
	return opts, nil
}

// mirrorProviderOptions reads what to mirror: the providers named, or
// those --lockfile locks, and where they go.
func mirrorProviderOptions(c *cli.Context, modules bool) (ingest.ProviderOptions, []names.ProviderSpec, error) {
	opts := ingest.ProviderOptions{EnforceGPGExpiration: enforceExpiration(c)}
	var err error
	if opts.Platforms, err = parsePlatforms(c.StringSlice("platform")); err != nil {
		return opts, nil, err
	}
	var specs []names.ProviderSpec
	if f := c.String("lockfile"); f != "" {
		if opts.Lock, err = lockfile.Read(f); err != nil {
			return opts, nil, err
		}
		if c.NArg() == 0 {
			if specs, err = opts.Lock.ProviderSpecs(); err != nil {
				return opts, nil, err
			}
		}
	}
	for _, arg := range c.Args().Slice() {
		s, err := names.ParseProviderSpec(arg)
		if err != nil {
			return opts, nil, usageError(c, "%v", err)
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 && c.String("tofu-repository") == "" && !modules {
		return opts, nil, usageError(c, "give the providers to mirror (ADDRESS[@CONSTRAINT]...), --lockfile, --tofu-repository, --module or --modules-from")
	}
	if len(specs) > 0 {
		if opts.Template, err = repotemplate.ParseProviderTemplate(c.String("provider-template")); err != nil {
			if c.String("provider-template") == "" {
				return opts, nil, usageError(c, "missing --provider-template TEMPLATE (where the providers go)")
			}
			return opts, nil, fmt.Errorf("--provider-template: %w", err)
		}
	}
	return opts, specs, nil
}

// tofuMirrorOptions are the OpenTofu releases to mirror into repository
// (--tofu-*), with providers' platforms, log, attestation and gate.
func tofuMirrorOptions(c *cli.Context, rep *report.Reporter, client *oci.Client, repository string, providers ingest.ProviderOptions) (*ingest.TofuOptions, error) {
	opts := &ingest.TofuOptions{
		APIURL:           c.String("tofu-api-url"),
		DownloadTemplate: c.String("tofu-download-url"),
		Platforms:        providers.Platforms,
		Log:              rep.Infof,
		Attest:           providers.Attest,
		Gate:             providers.Gate,
	}
	ref, err := tofuRepository(repository)
	if err != nil {
		return nil, err
	}
	opts.RepoRef = *ref
	if opts.Repo, err = client.Open(*ref); err != nil {
		return nil, err
	}
	if opts.Versions, err = names.ParseConstraints(c.String("tofu-versions")); err != nil {
		return nil, err
	}
	if opts.Keys, err = tofuKeyrings(c.StringSlice("tofu-key")); err != nil {
		return nil, err
	}
	return opts, nil
}
