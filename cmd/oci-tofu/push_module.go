package main

import (
	"github.com/opencontainers/go-digest"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func pushModuleCommand() *cli.Command {
	return &cli.Command{
		Name:      "module",
		Usage:     "pack a module directory (or push a module zip) as an oci:// module package",
		ArgsUsage: "SOURCE REPOSITORY:TAG",
		Description: `SOURCE is a module directory or an existing .zip module package.

A directory is packed reproducibly: files sorted, timestamps and permissions
normalised, so the same tree always gives the same digest. Left out: .git and
.terraform directories, *.tfstate* files and whatever .terraformignore lists.
Symbolic links are followed when they stay inside the directory and refused
otherwise. A .zip is pushed byte for byte after checking its entries.

REPOSITORY is host[:port]/path in a registry, or oci-layout:PATH. TAG is a
version (1.4.0, 2.0.0-rc1, 1.0.0+build.5 written as 1.0.0_build.5), or any
other OCI tag such as latest. Tags that look like versions must be canonical
(not v1.4.0 or 1.4). Tags are written last, after all content. A version tag is
written once: other content under an existing version is refused, naming both
digests, unless --replace. Tags that are not versions (latest, given as TAG or
with --also-tag) are pointers that move to this push.

The package's interface (what oci-tofu show prints) is stored beside it, an OCI
1.1 referrer of its manifest written before the tags; not in an OCI layout.

OpenTofu (>= 1.10) installs the result with
  source = "oci://REPOSITORY?tag=TAG"`,
		Flags: append(append([]cli.Flag{
			&cli.BoolFlag{Name: "allow-no-root", Usage: "accept a package without a .tf/.tofu file at its root (modules only in subdirectories)"},
			&cli.BoolFlag{Name: "no-cache", Usage: "always pack; do not consult or update the record of earlier packs (in the user cache directory)", EnvVars: []string{"OCI_TOFU_NO_CACHE"}},
			attestKeyFlag(),
			policyAddressFlag("registry.opentofu.org/acme/network/aws"),
		}, append(append(gatePolicyFlags(), tagFlags()...), registryFlags()...)...), append(outputFlags(), eventsFlags()...)...),
		Action: withEvents(pushModule),
	}
}

func pushModule(c *cli.Context) error {
	if err := wantArgs(c, 2, 2); err != nil {
		return err
	}
	ref, tag, err := modulepkg.ParseTarget(c.Args().Get(1))
	if err != nil {
		return err
	}
	tags, err := withAlsoTags(tag, c.StringSlice("also-tag"))
	if err != nil {
		return err
	}
	signer, err := attestSigner(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	if err := policyAllowsModuleTags(c, rep, ref, tags); err != nil { // before packing
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	target := modulepkg.Target{Client: client, Ref: ref, Tags: tags}
	pkg, err := modulepkg.Prepare(c.Context, c.Args().Get(0), target, modulePackOptions(c))
	if err != nil {
		return err
	}
	defer pkg.Remove()
	pkg.ReportPrepared(rep)
	res, err := moduledoc.Push(c.Context, pkg, target, moduledoc.PushOptions{PushOptions: pushOptions(c, rep), NotInLayout: true, Report: rep})
	if err != nil {
		return err
	}
	pushedEvent(c, names.KindModule, ref, tags, res) // events.go
	if err := attestModule(c, rep, client, ref, pkg, tags, res.Root.Digest, signer); err != nil {
		return err
	}
	return pkg.ReportPushed(rep, ref, tags, res)
}

// policyAllowsModuleTags asks the policy (gate.go) whether each version
// among tags may be pushed to ref.
func policyAllowsModuleTags(c *cli.Context, rep *report.Reporter, ref oci.Reference, tags []string) error {
	for _, t := range tags {
		if v, ok := names.VersionFromTag(t); ok {
			if err := policyAllowsPush(c, rep, names.KindModule, ref, v.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// attestModule signs the pushed manifest and attests the package, with
// --attest-key (signer; nil: nothing).
func attestModule(c *cli.Context, rep *report.Reporter, client *oci.Client, ref oci.Reference, pkg *modulepkg.Package, tags []string, root digest.Digest, signer *attest.Signer) error {
	if signer == nil {
		return nil
	}
	repo, err := client.Open(ref)
	if err != nil {
		return err
	}
	return attestPushed(c, rep, repo, ref, root, signer, modulepkg.PredicateType, pkg.Predicate(ref.Name(), tags, root, attestTime(), version))
}

// modulePackOptions are --allow-no-root and, unless --no-cache, the
// record of earlier packs.
func modulePackOptions(c *cli.Context) modulepkg.Options {
	opts := modulepkg.Options{AllowNoRoot: c.Bool("allow-no-root")}
	if !c.Bool("no-cache") {
		opts.Cache = modulepkg.DefaultCache()
	}
	return opts
}
