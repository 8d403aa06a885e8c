package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/providerdir"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/cliemit"
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
		}, append(append(registryFlags(), outputFlags()...), eventsFlags()...)...),
		Action: withEvents(pushMirror),
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
	rep := newReporter(c)
	key, err := keyAttester(c, rep.Infof)
	if err != nil {
		return err
	}
	releases, err := providerdir.Read(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	defer providerdir.Close(releases)
	refs, err := providerdir.Targets(tpl, releases)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	var results []map[string]any
	upToDate := 0
	for i, r := range releases {
		result, err := pushImported(c, rep, client, key, r, refs[i])
		if err != nil {
			return err
		}
		results = append(results, result)
		if result["up_to_date"] == true {
			upToDate++
		}
	}
	return rep.Result(map[string]any{"pushed": results}, providerdir.Summary(len(results)-upToDate, upToDate))
}

// pushImported pushes one release of the directory to ref
// (publish.PushProvider, Imported) and says what it did.
func pushImported(c *cli.Context, rep *report.Reporter, client *oci.Client, key *publish.KeyAttester, r *providerdir.Release, ref oci.Reference) (map[string]any, error) {
	repo, err := client.Open(ref)
	if err != nil {
		return nil, err
	}
	t := publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: ref, Options: oci.PushOptions{Replace: c.Bool("replace")}, Attest: key}, NoSBOM: c.Bool("no-sbom"), Report: rep, Imported: true}
	res, err, attestErr := publish.PushProvider(c.Context, r.Release, t)
	if err != nil {
		return nil, fmt.Errorf("%s %s → %s: %w", r.Provider, r.Release.Version, ref, err)
	}
	versionTag, _ := publish.VersionTagged(ref, r.Release.Version) // pushed: a version
	cliemit.From(c.Context).Pushed(events.KindProvider, r.Provider.String(), ref.Name(), []string{versionTag.Reference}, res)
	if attestErr != nil {
		return nil, attestErr
	}
	tagged := ref.WithReference(res.Root.Digest.String())
	rep.Infof("%s %s → %s (%s%s)", r.Provider, r.Release.Version, tagged, names.Plural(len(r.Release.Packages), "platform"), map[bool]string{true: ", up to date"}[res.UpToDate])
	return map[string]any{"provider": r.Provider.String(), "version": r.Release.Version, "reference": tagged.String(), "up_to_date": res.UpToDate, "sboms": publish.ReportSBOMs(rep, r.Release)}, nil
}
