package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/convert/vulnscan"
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

func runVulns(c *cli.Context) error {
	if err := wantArgs(c, 1, -1); err != nil {
		return err
	}
	targets, err := repositoryTargets(c, "vulns scans every version tag") // targets.go
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
	res := vulnscan.NewReport(c.String("vuln-db"), db)
	for _, t := range targets {
		repo, err := client.OpenReadOnly(c.Context, t.ref)
		if err != nil {
			return err
		}
		r, err := vulnscan.Scan(c.Context, repo, t.ref.Name(), db, vulnscan.Options{Concurrency: c.Int("concurrency")})
		if err != nil {
			return err
		}
		res.Add(r)
	}
	if err := newReporter(c).Result(res, res.Text(c.Bool("all"))); err != nil {
		return err
	}
	if status, why := res.Totals.ExitStatus(); c.Bool("exit-code") && status != 0 {
		return cli.Exit(why, status)
	}
	return nil
}
