package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/providerdir"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

func pushMirrorCommand() *cli.Command {
	return &cli.Command{
		Name:      "mirror",
		Usage:     "import a `tofu providers mirror` (or terraform's) directory",
		ArgsUsage: "DIR",
		Description: `Reads DIR in the packed layout (HOST/NAMESPACE/TYPE/<version>.json beside the zips;
the unpacked layout HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/ is packed into zips), verifies
every zip against the hashes its version.json records, and pushes each provider version
to the repository the template names. Everything is verified before anything is pushed.`,
		Flags: append([]cli.Flag{
			providerTemplateFlag(),
			replaceFlag(),
			attestKeyFlag(),
			noSBOMFlag(),
		}, append(registryFlags(), outputFlags()...)...),
		Action: pushMirror,
	}
}

func pushMirror(c *cli.Context) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	tpl, err := repotemplate.ParseProviderTemplate(c.String("provider-template"))
	if err != nil {
		return err
	}
	signer, err := attestSigner(c)
	if err != nil {
		return err
	}
	releases, err := providerdir.Read(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	defer closeReleases(releases)
	refs, err := mirroredRefs(tpl, releases)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	var results []map[string]any
	upToDate := 0
	for i, r := range releases {
		result, err := pushMirrored(c, rep, client, refs[i], r, signer)
		if err != nil {
			return err
		}
		results = append(results, result)
		if result["up_to_date"] == true {
			upToDate++
		}
	}
	return rep.result(map[string]any{"pushed": results}, importSummary(len(results)-upToDate, upToDate))
}

func closeReleases(releases []*providerdir.Release) {
	for _, r := range releases {
		r.Close()
	}
}

// mirroredRefs are the repositories tpl maps the releases to, each
// release checked to be served as its provider's type: everything is
// checked before anything is pushed.
func mirroredRefs(tpl *repotemplate.Template, releases []*providerdir.Release) ([]oci.Reference, error) {
	refs := make([]oci.Reference, len(releases))
	for i, r := range releases {
		var err error
		if refs[i], err = tpl.Expand(r.Provider.TemplateValues()); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Provider, err)
		}
		if err := r.Release.CheckServedAs(r.Provider.Type); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Provider, err)
		}
	}
	return refs, nil
}

// pushMirrored pushes one release of the directory to ref, with its SBOMs
// and, given a signer, its attestation; the result is its --json entry.
func pushMirrored(c *cli.Context, rep *reporter, client *oci.Client, ref oci.Reference, r *providerdir.Release, signer *attest.Signer) (map[string]any, error) {
	repo, err := client.Open(ref)
	if err != nil {
		return nil, err
	}
	configureSBOMs(c, rep, r.Release, ref, signer)
	res, err := r.Release.Push(c.Context, repo, oci.PushOptions{Replace: c.Bool("replace")})
	if err != nil {
		return nil, fmt.Errorf("%s %s → %s: %w", r.Provider, r.Release.Version, ref, err)
	}
	if signer != nil {
		if err := attestProvider(c, rep, repo, ref, r.Release, res.Root, release.Options{}, signer); err != nil {
			return nil, err
		}
	}
	tagged := ref.WithReference(res.Root.Digest.String())
	rep.infof("%s %s → %s (%s%s)", r.Provider, r.Release.Version, tagged, names.Plural(len(r.Release.Packages), "platform"), map[bool]string{true: ", up to date"}[res.UpToDate])
	return map[string]any{"provider": r.Provider.String(), "version": r.Release.Version, "reference": tagged.String(), "up_to_date": res.UpToDate, "sboms": reportSBOMs(rep, r.Release)}, nil
}

// importSummary says what an import did: the versions it pushed, and
// those the registry already held.
func importSummary(imported, upToDate int) string {
	switch {
	case upToDate == 0:
		return "imported " + names.Plural(imported, "provider version")
	case imported == 0:
		return names.Plural(upToDate, "provider version") + " already up to date; nothing imported"
	}
	return fmt.Sprintf("imported %s; %d already up to date", names.Plural(imported, "provider version"), upToDate)
}
