package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/convert/vulnscan"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func vulnsCommand() *cli.Command {
	return &cli.Command{
		Name:      "vulns",
		Usage:     "which stored provider versions contain a module with a known vulnerability",
		ArgsUsage: "REPOSITORY... | --provider-template TEMPLATE ADDRESS...",
		Description: `Each REPOSITORY is host[:port]/path in a registry holding a provider; with
--provider-template, each ADDRESS (hashicorp/aws, registry.opentofu.org/hashicorp/aws)
names a provider whose repository the template gives. For each version tag and each
platform of its index, the SBOM stored for the platform (push provider, mirror and
pull-through store one as a referrer of the platform manifest) is read, and the modules
of its Go executables, with the Go standard library of their toolchain, are matched
against the vulnerability database --vuln-db (the Go vulnerability database's layout,
what ` + "`govulncheck -db file://DIR`" + ` reads).

Matching is at the module level, as ` + "`govulncheck -mode binary -scan module`" + `: a module
is affected when its version is in an entry's affected ranges (for the platform), whether
or not the provider calls the vulnerable code. Each affected platform is listed with the
entries, the module and version, and the version that fixes it; platforms without an SBOM
are listed too, so the answer says what it covers. The exit status is 0 whatever is
found (read the JSON, or the totals line), unless --exit-code: then 3 when a version is
affected (govulncheck's status for findings), 4 when none is but a platform has no SBOM.`,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "vuln-db", Usage: "the vulnerability database `DIR` (index/db.json, index/modules.json, ID/*.json)", Required: true, EnvVars: []string{"OCI_TOFU_VULN_DB"}},
			&cli.StringFlag{Name: "provider-template", Usage: "where the ADDRESS arguments' providers live, as tofu's repository_template: e.g. `ghcr.io/acme/providers/${namespace}/${type}`", EnvVars: []string{"OCI_TOFU_PROVIDER_TEMPLATE"}},
			&cli.IntFlag{Name: "concurrency", Usage: "read at most `N` versions at once", Value: vulnscan.DefaultConcurrency},
			&cli.BoolFlag{Name: "all", Usage: "list every version and platform, not only those affected or without an SBOM"},
			&cli.BoolFlag{Name: "exit-code", Usage: "exit with status 3 when a version is affected, 4 when none is but a platform has no SBOM (for CI)"},
		}, registryFlags()...), outputFlags()...),
		Action: runVulns,
	}
}

// vulnsDatabase is the database in `vulns --json`.
type vulnsDatabase struct {
	Dir         string    `json:"dir"`
	Modified    time.Time `json:"modified"`
	Entries     int       `json:"entries"`
	Fingerprint string    `json:"fingerprint"`
	Skipped     []string  `json:"skipped,omitempty"`
}

// vulnsTotals sum up `vulns`.
type vulnsTotals struct {
	Versions          int `json:"versions"`
	Platforms         int `json:"platforms"`
	AffectedVersions  int `json:"affected_versions"`
	AffectedPlatforms int `json:"affected_platforms"`
	WithoutSBOM       int `json:"platforms_without_sbom"`
}

func runVulns(c *cli.Context) error {
	if err := wantArgs(c, 1, -1); err != nil {
		return err
	}
	targets, err := repositoryTargets(c, "vulns scans every version tag") // prune.go
	if err != nil {
		return err
	}
	db, err := vulns.Open(c.String("vuln-db"))
	if err != nil {
		return fmt.Errorf("--vuln-db: %w", err)
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	res := struct {
		Database     vulnsDatabase          `json:"database"`
		Repositories []*vulnscan.Repository `json:"repositories"`
		Totals       vulnsTotals            `json:"totals"`
	}{Database: vulnsDatabase{Dir: c.String("vuln-db"), Modified: db.Modified(), Entries: db.Entries(), Fingerprint: db.Fingerprint()}}
	for _, s := range db.Skipped() {
		res.Database.Skipped = append(res.Database.Skipped, s.String())
	}
	for _, t := range targets {
		repo, err := client.OpenReadOnly(c.Context, t.ref)
		if err != nil {
			return err
		}
		r, err := vulnscan.Scan(c.Context, repo, t.ref.Name(), db, vulnscan.Options{Concurrency: c.Int("concurrency")})
		if err != nil {
			return err
		}
		res.Repositories = append(res.Repositories, r)
	}
	var human strings.Builder
	if n := len(res.Database.Skipped); n > 0 {
		fmt.Fprintf(&human, "warning: the database skipped %s (first: %s)\n", names.Plural(n, "entry file"), res.Database.Skipped[0])
	}
	for _, r := range res.Repositories {
		fmt.Fprintf(&human, "%s\n", r.Repository)
		shown := 0
		for _, v := range r.Versions {
			res.Totals.Versions++
			if v.Affected() {
				res.Totals.AffectedVersions++
			}
			if v.Error != "" {
				fmt.Fprintf(&human, "  %-16s not scanned: %s\n", v.Version, v.Error)
				shown++
				continue
			}
			for _, p := range v.Platforms {
				res.Totals.Platforms++
				switch {
				case !p.SBOM:
					res.Totals.WithoutSBOM++
					why := "no SBOM"
					if p.Error != "" {
						why = "no readable SBOM: " + p.Error
					}
					fmt.Fprintf(&human, "  %-16s %-16s %s\n", v.Version, p.Platform, why)
					shown++
				case len(p.Findings) > 0:
					res.Totals.AffectedPlatforms++
					for _, f := range vulnscan.Findings(p.Findings) { // one line each
						fmt.Fprintf(&human, "  %-16s %-16s %s\n", v.Version, p.Platform, policy.DescribeFindings([]vulns.Finding{f}))
					}
					shown++
				case c.Bool("all"):
					fmt.Fprintf(&human, "  %-16s %-16s no known vulnerability (%s, %s)\n", v.Version, p.Platform, p.GoVersion, names.Plural(p.Modules, "module"))
					shown++
				}
			}
		}
		if shown == 0 {
			human.WriteString("  (no known vulnerability, every platform has an SBOM)\n")
		}
	}
	t := res.Totals
	fmt.Fprintf(&human, "total: %s with %s scanned: %s affected (%s), %s without an SBOM (database of %s, %s)",
		names.Plural(t.Versions, "version"), names.Plural(t.Platforms, "platform"), names.Plural(t.AffectedVersions, "version"),
		names.Plural(t.AffectedPlatforms, "platform"), names.Plural(t.WithoutSBOM, "platform"), db.Modified().UTC().Format(time.DateOnly), strconv.Itoa(db.Entries())+" entries")
	if err := rep.result(res, human.String()); err != nil {
		return err
	}
	return vulnsExit(c.Bool("exit-code"), t)
}

// Exit statuses of `vulns --exit-code`: affected versions found (as
// govulncheck's text output exits when it finds any), or none found but
// some platform not covered (no readable SBOM).
const (
	exitAffected    = 3
	exitWithoutSBOM = 4
)

// vulnsExit is the error that makes `vulns --exit-code` exit with the
// status its totals call for; nil without the flag or when nothing is
// affected and every platform has an SBOM.
func vulnsExit(exitCode bool, t vulnsTotals) error {
	switch {
	case !exitCode:
		return nil
	case t.AffectedVersions > 0:
		return cli.Exit(names.Plural(t.AffectedVersions, "version")+" affected", exitAffected)
	case t.WithoutSBOM > 0:
		return cli.Exit(names.Plural(t.WithoutSBOM, "platform")+" without an SBOM", exitWithoutSBOM)
	}
	return nil
}
