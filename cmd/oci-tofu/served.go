package main

// What serve maps to repositories and judges them by, read the same way
// by serve and by policy test against the registry.

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/cliconfig"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// servedSourceFlags map what is served to repositories (serve, and
// policy test against the registry): read by readServedSources.
func servedSourceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "provider-template", Usage: "repository `TEMPLATE` for providers: ${hostname}, ${namespace}, ${type}", EnvVars: []string{"OCI_TOFU_PROVIDER_TEMPLATE"}},
		&cli.StringSliceFlag{Name: "module-template", Usage: "repository `TEMPLATE` for modules (registry protocol): ${namespace}, ${name}, ${system}, ${hostname}; repeat to merge several, first holder of a version wins (comma-separated in the variable)", EnvVars: []string{"OCI_TOFU_MODULE_TEMPLATE"}},
		&cli.StringFlag{Name: "tofu-repository", Usage: "`REPOSITORY` (or oci-layout:PATH) of OpenTofu releases to serve as a TofuDL mirror", EnvVars: []string{"OCI_TOFU_TOFU_REPOSITORY"}},
		&cli.StringFlag{Name: "config", Usage: "OpenTofu CLI configuration `FILE` whose provider_installation oci_mirror blocks (repository_template, include, exclude) map providers to repositories, first match wins; after --provider-template", EnvVars: []string{"OCI_TOFU_CONFIG"}},
		&cli.StringSliceFlag{Name: "include", Usage: "serve only providers matching `host/namespace/type` (wildcards *, repeatable)", EnvVars: []string{"OCI_TOFU_INCLUDE"}},
		&cli.StringSliceFlag{Name: "exclude", Usage: "never serve providers matching `host/namespace/type` (repeatable)", EnvVars: []string{"OCI_TOFU_EXCLUDE"}},
	}
}

// readServedSources reads what is served from where: the provider
// mappings (--provider-template with --include and --exclude, then
// --config's oci_mirror blocks), --module-template and --tofu-repository.
func readServedSources(c *cli.Context, opts *proxy.Options) error {
	var err error
	if opts.ProviderMappings, err = providerMappings(c); err != nil {
		return err
	}
	moduleTemplates := c.StringSlice("module-template")
	if len(opts.ProviderMappings) == 0 && len(moduleTemplates) == 0 && c.String("tofu-repository") == "" {
		return fmt.Errorf("give at least one of --provider-template (e.g. ghcr.io/acme/providers/${namespace}/${type}), --module-template (e.g. ghcr.io/acme/modules/${namespace}/${name}/${system}) and --tofu-repository (e.g. ghcr.io/acme/opentofu)")
	}
	if err := readModuleTemplates(moduleTemplates, opts); err != nil {
		return err
	}
	opts.TofuRepository, err = tofuRepository(c.String("tofu-repository"))
	return err
}

// readModuleTemplates parses the --module-template values into
// ModuleMappings, in order: pull-through stores into the first, the
// others are merged after it.
func readModuleTemplates(values []string, opts *proxy.Options) error {
	for _, s := range values {
		tpl, err := repotemplate.ParseModuleTemplate(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--module-template %q: %w", s, err)
		}
		if slices.ContainsFunc(opts.ModuleMappings, func(t *repotemplate.Template) bool { return t.String() == tpl.String() }) {
			return fmt.Errorf("--module-template %q is given twice", s)
		}
		opts.ModuleMappings = append(opts.ModuleMappings, tpl)
	}
	return nil
}

// providerMappings are the provider mappings in the order they are
// tried: --provider-template (filtered by --include and --exclude), then
// the oci_mirror blocks of --config. Each mapping's Source names where it
// was configured, for the check table, the logs and the status page.
func providerMappings(c *cli.Context) ([]store.ProviderMapping, error) {
	fromConfig, err := configMappings(c.String("config"))
	if err != nil {
		return nil, err
	}
	include, err := cliconfig.ParseMatchingPatterns(c.StringSlice("include"))
	if err != nil {
		return nil, fmt.Errorf("--include: %w", err)
	}
	exclude, err := cliconfig.ParseMatchingPatterns(c.StringSlice("exclude"))
	if err != nil {
		return nil, fmt.Errorf("--exclude: %w", err)
	}
	s := c.String("provider-template")
	if s == "" {
		return fromConfig, nil
	}
	tpl, err := repotemplate.ParseProviderTemplate(s)
	if err != nil {
		return nil, fmt.Errorf("--provider-template: %w", err)
	}
	flagged := store.ProviderMapping{Template: tpl, Include: include, Exclude: exclude, Label: "--provider-template"}
	return append([]store.ProviderMapping{flagged}, fromConfig...), nil
}

// configMappings are the oci_mirror blocks of a tofu CLI configuration
// file ("" for none).
func configMappings(file string) ([]store.ProviderMapping, error) {
	if file == "" {
		return nil, nil
	}
	mirrors, err := cliconfig.ReadOCIMirrors(file)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var mappings []store.ProviderMapping
	for _, m := range mirrors {
		mappings = append(mappings, store.ProviderMapping{Template: m.Template, Include: m.Include, Exclude: m.Exclude, Label: m.Pos})
	}
	return mappings, nil
}

// tofuRepository parses --tofu-repository: a repository, no tag.
func tofuRepository(s string) (*oci.Reference, error) {
	if s == "" {
		return nil, nil
	}
	ref, err := oci.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("--tofu-repository: %w", err)
	}
	if ref.Reference != "" {
		return nil, fmt.Errorf("--tofu-repository %s: give the repository without a tag or digest; tags are the versions", s)
	}
	return &ref, nil
}

// vulnDBFlag is the vulnerability database a policy's vulnerabilities
// blocks match stored SBOMs against.
func vulnDBFlag() cli.Flag {
	return &cli.StringFlag{Name: "vuln-db", Usage: "match the SBOMs stored for each provider platform against the vulnerability database in `DIR` (the Go vulnerability database's layout, as `govulncheck -db file://DIR` reads it, e.g. a copy of vuln.go.dev) for the policy's vulnerabilities blocks (docs/policy.md); checked for changes every 30 s and on SIGHUP, and reloaded when its index or an entry file changes; a database is taken whole: one with an entry missing or half written is not put in force", EnvVars: []string{"OCI_TOFU_VULN_DB"}}
}

// readVulnDB opens --vuln-db, when given, into opts.
func readVulnDB(c *cli.Context, opts *proxy.Options, logger *slog.Logger) error {
	dir := c.String("vuln-db")
	if dir == "" {
		return nil
	}
	db, err := vulns.OpenLive(dir, 0, logger)
	if err != nil {
		return fmt.Errorf("--vuln-db: %w", err)
	}
	opts.VulnDB = db
	return nil
}
