package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

func sbomCommand() *cli.Command {
	return &cli.Command{
		Name:      "sbom",
		Usage:     "print a stored provider version's SBOMs, or --backfill the SBOMs versions lack",
		ArgsUsage: "REPOSITORY:VERSION | --backfill REPOSITORY[:VERSION]...",
		Description: `Each platform of a provider version stored by oci-tofu has its SBOM (SPDX 2.3 JSON,
made from the Go build information of the executables in its zip) as an OCI 1.1
referrer of its platform manifest (docs/artifacts.md).

Reading: sbom REPOSITORY:VERSION prints the SPDX document of the version's one
platform, or of --platform's, as stored; --output DIR writes one file per platform,
DIR/terraform-provider-TYPE_VERSION_OS_ARCH.spdx.json; --summary prints what each
says instead (Go version, main module, number of modules, executables). A version of
several platforms needs --platform, --output or --summary.

--backfill stores the SBOM of every version and platform that lacks one (each
REPOSITORY's version tags, or only VERSION): each zip is read from the registry, its
digest verified, and described as push provider would have (the same bytes); with
--attest-key each SBOM written is attested too. A platform that has one is left
alone: a second run writes nothing, and says so. Each version and platform is
reported: written, present, no executable, or error (the exit status is 1 then).

With --provider-template TEMPLATE, the arguments are ADDRESS@VERSION (or, with
--backfill, ADDRESS[@VERSION]): each ADDRESS (hashicorp/aws, registry.opentofu.org/
hashicorp/aws) names a provider whose repository the template gives.`,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "provider-template", Usage: "where the ADDRESS arguments' providers live, as tofu's repository_template: e.g. `ghcr.io/acme/providers/${namespace}/${type}`", EnvVars: []string{"OCI_TOFU_PROVIDER_TEMPLATE"}},
			&cli.StringSliceFlag{Name: "platform", Usage: "only this `os_arch` (repeatable with --backfill)"},
			&cli.StringFlag{Name: "output", Usage: "write each platform's SPDX document into `DIR` instead of printing it"},
			&cli.BoolFlag{Name: "summary", Usage: "print a summary of each platform's SBOM instead of the document"},
			&cli.BoolFlag{Name: "backfill", Usage: "store the SBOMs versions and platforms lack"},
			attestKeyFlag(),
		}, registryFlags()...), outputFlags()...),
		Action: runSBOM,
	}
}

func runSBOM(c *cli.Context) error {
	backfill := c.Bool("backfill")
	maxArgs := 1
	if backfill {
		maxArgs = -1
	}
	if err := wantArgs(c, 1, maxArgs); err != nil {
		return err
	}
	targets, err := sbomTargets(c)
	if err != nil {
		return err
	}
	platforms, err := parsePlatforms(c.StringSlice("platform")) // platforms.go
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	if backfill {
		if c.String("output") != "" || c.Bool("summary") {
			return usageError(c, "--backfill writes SBOMs; read them without it (--output, --summary)")
		}
		return backfillSBOMs(c, client, targets, platforms)
	}
	if targets[0].Version == nil {
		return usageError(c, "%s: name the version (REPOSITORY:VERSION, or ADDRESS@VERSION with --provider-template)", c.Args().First())
	}
	return readSBOMs(c, client, targets[0], platforms)
}

// sbomTargets are the repositories (and versions) the arguments name.
func sbomTargets(c *cli.Context) ([]publish.BackfillTarget, error) {
	tpl, err := providerTemplate(c) // targets.go
	if err != nil {
		return nil, err
	}
	var out []publish.BackfillTarget
	for _, arg := range c.Args().Slice() {
		t, err := sbomTarget(c, tpl, arg)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// sbomTarget is the repository (and version) one argument names:
// REPOSITORY[:VERSION], or with tpl ADDRESS[@VERSION].
func sbomTarget(c *cli.Context, tpl *repotemplate.Template, arg string) (publish.BackfillTarget, error) {
	var t publish.BackfillTarget
	var tag string
	if tpl == nil {
		ref, err := oci.ParseReference(arg)
		if err != nil {
			return t, usageError(c, "%v", err)
		}
		tag, ref.Reference = ref.Reference, ""
		t.Ref = ref
	} else {
		addr, v, _ := strings.Cut(arg, "@")
		var err error
		if t.Ref, _, err = providerRepository(c, tpl, addr, arg); err != nil { // targets.go
			return t, err
		}
		tag = v
	}
	if tag != "" {
		v, err := tagVersion(c, arg, tag)
		if err != nil {
			return t, err
		}
		t.Version = &v
	}
	return t, nil
}

// tagVersion is the version a tag (or a version as written) names.
func tagVersion(c *cli.Context, arg, tag string) (names.Version, error) {
	if v, ok := names.VersionFromTag(tag); ok {
		return v, nil
	}
	v, err := names.ParseVersion(tag)
	if err != nil {
		return v, usageError(c, "%s: %q is no version", arg, tag)
	}
	return v, nil
}

// readSBOMs prints or writes the SBOMs of one version's platforms.
func readSBOMs(c *cli.Context, client *oci.Client, t publish.BackfillTarget, platforms []names.Platform) error {
	tagged := t.Ref.Name() + ":" + names.TagForVersion(*t.Version)
	sv, err := resolveVersion(c, client, t, tagged)
	if err != nil {
		return err
	}
	chosen, err := chosenPlatforms(c, tagged, sv, platforms)
	if err != nil {
		return err
	}
	reference := t.Ref.WithReference(names.TagForVersion(*t.Version)).String()
	return sv.Print(c.Context, tagged, reference, chosen, sbom.Output{Dir: c.String("output"), Summary: c.Bool("summary")}, newReporter(c))
}

// resolveVersion opens t's repository and resolves its version (tagged,
// as the user named it).
func resolveVersion(c *cli.Context, client *oci.Client, t publish.BackfillTarget, tagged string) (*sbom.StoredVersion, error) {
	repo, err := client.Open(t.Ref)
	if err != nil {
		return nil, err
	}
	sv, err := sbom.ResolveVersion(c.Context, repo, *t.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tagged, err)
	}
	return sv, nil
}

// chosenPlatforms are the platforms of sv (tagged, as the user named it)
// to read (sbom.StoredVersion.Choose); several need --output or --summary.
func chosenPlatforms(c *cli.Context, tagged string, sv *sbom.StoredVersion, platforms []names.Platform) ([]names.Platform, error) {
	chosen, err := sv.Choose(platforms)
	if err != nil {
		return nil, fmt.Errorf("%s %w", tagged, err)
	}
	if len(chosen) > 1 && c.String("output") == "" && !c.Bool("summary") {
		return nil, usageError(c, "%s has %d platforms (%s): choose one with --platform, or write them all with --output DIR, or --summary",
			tagged, len(chosen), sv.PlatformList())
	}
	return chosen, nil
}

// backfillSBOMs stores the SBOMs the targets' versions lack
// (publish.Backfill), and reports them.
func backfillSBOMs(c *cli.Context, client *oci.Client, targets []publish.BackfillTarget, platforms []names.Platform) error {
	rep := newReporter(c)
	key, err := keyAttester(c, rep.Infof)
	if err != nil {
		return err
	}
	b, err := publish.Backfill(c.Context, targets, publish.BackfillOptions{Open: client.Open, Platforms: platforms, Attest: key, Log: rep.Infof})
	if err != nil {
		return err
	}
	if err := b.Report(rep); err != nil {
		return err
	}
	if failed := b.Count(release.SBOMFailed); failed > 0 {
		return cli.Exit(fmt.Sprintf("%d SBOMs could not be stored", failed), 1)
	}
	return nil
}
