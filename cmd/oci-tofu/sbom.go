package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
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

// sbomTarget is a repository an argument names, and its version, if it
// names one.
type sbomTarget struct {
	ref     oci.Reference
	version *names.Version
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
	platforms, err := parsePlatforms(c.StringSlice("platform"))
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
	if targets[0].version == nil {
		return usageError(c, "%s: name the version (REPOSITORY:VERSION, or ADDRESS@VERSION with --provider-template)", c.Args().First())
	}
	return readSBOMs(c, client, targets[0], platforms)
}

// sbomTargets are the repositories (and versions) the arguments name.
func sbomTargets(c *cli.Context) ([]sbomTarget, error) {
	var out []sbomTarget
	raw := c.String("provider-template")
	var tpl *repotemplate.Template
	if raw != "" {
		var err error
		if tpl, err = repotemplate.ParseProviderTemplate(raw); err != nil {
			return nil, fmt.Errorf("--provider-template: %w", err)
		}
	}
	for _, arg := range c.Args().Slice() {
		var t sbomTarget
		var tag string
		if tpl == nil {
			ref, err := oci.ParseReference(arg)
			if err != nil {
				return nil, usageError(c, "%v", err)
			}
			tag, ref.Reference = ref.Reference, ""
			t.ref = ref
		} else {
			addr, v, _ := strings.Cut(arg, "@")
			p, err := names.ParseProvider(addr)
			if err != nil {
				return nil, usageError(c, "%v", err)
			}
			if t.ref, err = tpl.Expand(p.TemplateValues()); err != nil {
				return nil, fmt.Errorf("%s: %w", arg, err)
			}
			tag = v
		}
		if tag != "" {
			v, ok := names.VersionFromTag(tag)
			if !ok {
				pv, err := names.ParseVersion(tag)
				if err != nil {
					return nil, usageError(c, "%s: %q is no version", arg, tag)
				}
				v = pv
			}
			t.version = &v
		}
		out = append(out, t)
	}
	return out, nil
}

// readSBOMs prints or writes the SBOMs of one version's platforms.
func readSBOMs(c *cli.Context, client *oci.Client, t sbomTarget, platforms []names.Platform) error {
	repo, err := client.Open(t.ref)
	if err != nil {
		return err
	}
	pv, err := oci.ResolveProvider(c.Context, repo, *t.version)
	if err != nil {
		return fmt.Errorf("%s:%s: %w", t.ref.Name(), names.TagForVersion(*t.version), err)
	}
	chosen := pv.SortedPlatforms()
	if len(platforms) > 0 {
		chosen = nil
		for _, p := range platforms {
			if _, ok := pv.Platforms[p]; !ok {
				return fmt.Errorf("%s:%s has no %s platform (it has %s)", t.ref.Name(), names.TagForVersion(*t.version), p, platformList(pv))
			}
			chosen = append(chosen, p)
		}
	}
	dir, summary := c.String("output"), c.Bool("summary")
	if len(chosen) > 1 && dir == "" && !summary {
		return usageError(c, "%s:%s has %d platforms (%s): choose one with --platform, or write them all with --output DIR, or --summary",
			t.ref.Name(), names.TagForVersion(*t.version), len(chosen), platformList(pv))
	}
	rep := newReporter(c)
	var summaries []sbom.Summary
	var human []string
	for _, p := range chosen {
		st, err := sbom.Read(c.Context, repo, pv.Platforms[p].Digest)
		if errors.Is(err, sbom.ErrNoSBOM) {
			return fmt.Errorf("%s:%s %s (%s): %w (oci-tofu sbom --backfill stores one)", t.ref.Name(), names.TagForVersion(*t.version), p, pv.Platforms[p].Digest, err)
		}
		if err != nil {
			return err
		}
		switch {
		case summary:
			s := sbom.Summarize(p, st)
			summaries, human = append(summaries, s), append(human, s.Text())
		case dir != "":
			name := filepath.Join(dir, strings.TrimSuffix(st.Doc.FileName, ".zip")+".spdx.json")
			if err := os.WriteFile(name, st.SPDX, 0o644); err != nil {
				return err
			}
			rep.infof("wrote %s", name)
		default:
			_, err := c.App.Writer.Write(st.SPDX)
			return err
		}
	}
	if summary {
		return rep.result(map[string]any{"reference": t.ref.WithReference(names.TagForVersion(*t.version)).String(), "platforms": summaries}, strings.Join(human, "\n"))
	}
	return nil
}

func platformList(pv *oci.ProviderVersion) string {
	var s []string
	for _, p := range pv.SortedPlatforms() {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}

// backfillSBOMs stores the SBOMs the targets' versions lack.
func backfillSBOMs(c *cli.Context, client *oci.Client, targets []sbomTarget, platforms []names.Platform) error {
	signer, err := attestSigner(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	var results []map[string]any
	counts := map[string]int{}
	note := func(repository, version, platform, status, detail string) {
		counts[status]++
		r := map[string]any{"repository": repository, "version": version, "status": status}
		if platform != "" {
			r["platform"] = platform
		}
		if detail != "" {
			r["detail"] = detail
		}
		results = append(results, r)
		line := fmt.Sprintf("%-13s %s %s %s", status, repository, version, platform)
		if detail != "" {
			line += ": " + detail
		}
		rep.infof("%s", strings.TrimRight(line, " "))
	}
	for _, t := range targets {
		repo, err := client.Open(t.ref)
		if err != nil {
			return err
		}
		opts := release.SBOMOptions{}
		if signer != nil {
			a := &ingest.Attestation{Attester: keyAttester{s: signer, log: func(format string, args ...any) { rep.infof(format, args...) }}, Version: version}
			opts.Attest = a.SBOM(t.ref.Name())
		}
		versions := []names.Version{}
		if t.version != nil {
			versions = append(versions, *t.version)
		} else if versions, err = oci.ListVersions(c.Context, repo); err != nil {
			return fmt.Errorf("%s: %w", t.ref.Name(), err)
		}
		typ := t.ref.Repository[strings.LastIndex(t.ref.Repository, "/")+1:]
		for _, v := range versions {
			pv, err := oci.ResolveProvider(c.Context, repo, v)
			if err != nil {
				note(t.ref.Name(), v.String(), "", "error", err.Error())
				continue
			}
			got, err := release.BackfillSBOMs(c.Context, repo, pv, typ, platforms, opts)
			for _, r := range got {
				if r.Status == "" { // not reached: the registry failed first
					continue
				}
				detail := r.Referrer.String()
				if r.Err != nil {
					detail = r.Err.Error()
				}
				if r.Attested {
					detail += ", attested"
				}
				note(t.ref.Name(), v.String(), r.Platform.String(), string(r.Status), detail)
			}
			if err != nil {
				note(t.ref.Name(), v.String(), "", "error", err.Error())
			}
		}
	}
	summary := fmt.Sprintf("%d written, %d present already, %d without executable, %d failed", counts[string(release.SBOMWritten)], counts[string(release.SBOMPresent)], counts[string(release.SBOMNoExecutable)], counts[string(release.SBOMFailed)])
	if counts[string(release.SBOMWritten)] == 0 {
		summary += ": nothing written"
	}
	if err := rep.result(map[string]any{"results": results, "written": counts[string(release.SBOMWritten)], "present": counts[string(release.SBOMPresent)],
		"no_executable": counts[string(release.SBOMNoExecutable)], "failed": counts[string(release.SBOMFailed)]}, summary); err != nil {
		return err
	}
	if counts[string(release.SBOMFailed)] > 0 {
		return cli.Exit(fmt.Sprintf("%d SBOMs could not be stored", counts[string(release.SBOMFailed)]), 1)
	}
	return nil
}
