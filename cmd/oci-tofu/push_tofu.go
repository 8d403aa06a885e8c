package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func pushTofuCommand() *cli.Command {
	return &cli.Command{
		Name:      "tofu",
		Usage:     "verify an OpenTofu release directory and push it for the TofuDL mirror",
		ArgsUsage: "DIR REPOSITORY",
		Description: `DIR holds one OpenTofu release: tofu_<v>_<os>_<arch>.tar.gz (and .zip or other files),
tofu_<v>_SHA256SUMS and its binary signature tofu_<v>_SHA256SUMS.gpgsig. The signature
must verify with OpenTofu's signing key (E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80), or with
--key for self-built releases, and every file must match SHA256SUMS. The release is pushed
as one artifact tagged with the version, each file a layer named after it, so that
oras pull gives the release back. The tag is written last. A version is written
once: other content under an existing version is refused, naming both digests,
unless --replace. --also-tag writes pointers such as latest, which move to this push.`,
		Flags: append(append([]cli.Flag{
			&cli.StringSliceFlag{Name: "key", Usage: "armored public key `FILE` instead of OpenTofu's (repeatable)", EnvVars: []string{"OCI_TOFU_TOFU_KEYS"}},
			attestKeyFlag(),
		}, append(append(gatePolicyFlags(), tagFlags()...), registryFlags()...)...), append(outputFlags(), eventsFlags()...)...),
		Action: withEvents(pushTofu),
	}
}

func pushTofu(c *cli.Context) error {
	if err := wantArgs(c, 2, 2); err != nil {
		return err
	}
	ref, err := repositoryArg(c.Args().Get(1), "the tag is the version")
	if err != nil {
		return err
	}
	keys, err := tofuKeyrings(c.StringSlice("key"))
	if err != nil {
		return err
	}
	rep := newReporter(c)
	key, err := keyAttester(c, rep.Infof)
	if err != nil {
		return err
	}
	rel, err := release.ReadTofu(c.Context, c.Args().Get(0), keys)
	if err != nil {
		return err
	}
	rep.Infof("verified OpenTofu %s: %s, signature by key %s", rel.Version, names.Plural(len(rel.Files), "file"), rel.KeyID)
	if err := policyAllowsPush(c, rep, names.KindTofu, ref, rel.Version); err != nil { // policy_gate.go: before any upload
		return err
	}
	t, tagged, err := pushTarget(c, rep, ref, rel.Version, key) // push_provider.go
	if err != nil {
		return err
	}
	res, err, attestErr := publish.PushTofu(c.Context, rel, t)
	if err != nil {
		return fmt.Errorf("pushing to %s: %w (the tag was not written)", ref.Name(), err)
	}
	pushedEvent(c, names.KindTofu, ref, []string{tagged.Reference}, res) // events.go
	if attestErr != nil {
		return attestErr
	}
	return publish.ReportTofuPushed(rep, rel, tagged, res)
}
