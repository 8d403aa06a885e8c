package main

// The repositories prune, vulns and sbom work on: REPOSITORY... or, with
// --provider-template, ADDRESS... (a provider the template maps).

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// repositoryTarget is one repository a command reads (prune, vulns, sbom),
// and the provider address it was named by, if any.
type repositoryTarget struct {
	ref oci.Reference
	// provider is the ADDRESS argument it came from, if any.
	provider *names.Provider
}

// repositoryTargets are the repositories the arguments name:
// repositories, or provider addresses through --provider-template; why
// says why a tag is refused.
func repositoryTargets(c *cli.Context, why string) ([]repositoryTarget, error) {
	var targets []repositoryTarget
	raw := c.String("provider-template")
	if raw == "" {
		for _, arg := range c.Args().Slice() {
			ref, err := repositoryArg(arg, why)
			if err != nil {
				return nil, usageError(c, "%v", err)
			}
			targets = append(targets, repositoryTarget{ref: ref})
		}
		return targets, nil
	}
	tpl, err := providerTemplate(c)
	if err != nil {
		return nil, err
	}
	for _, arg := range c.Args().Slice() {
		ref, p, err := providerRepository(c, tpl, arg, arg)
		if err != nil {
			return nil, err
		}
		targets = append(targets, repositoryTarget{ref: ref, provider: &p})
	}
	return targets, nil
}

// providerTemplate is --provider-template, or nil.
func providerTemplate(c *cli.Context) (*repotemplate.Template, error) {
	raw := c.String("provider-template")
	if raw == "" {
		return nil, nil
	}
	tpl, err := repotemplate.ParseProviderTemplate(raw)
	if err != nil {
		return nil, fmt.Errorf("--provider-template: %w", err)
	}
	return tpl, nil
}

// repositoryArg parses a repository argument, which must carry no tag
// (why says where the tag comes from).
func repositoryArg(arg, why string) (oci.Reference, error) {
	ref, err := oci.ParseReference(arg)
	if err != nil {
		return ref, err
	}
	if ref.Reference != "" {
		return ref, fmt.Errorf("%s: give the repository without a tag; %s", arg, why)
	}
	return ref, nil
}

// providerTemplateFlag is the required --provider-template of lock,
// push mirror and export.
func providerTemplateFlag() cli.Flag {
	return &cli.StringFlag{
		Name:     "provider-template",
		Usage:    "where providers live, as tofu's repository_template: e.g. `ghcr.io/acme/providers/${namespace}/${type}` or oci-layout:DIR/${namespace}/${type}",
		EnvVars:  []string{"OCI_TOFU_PROVIDER_TEMPLATE"},
		Required: true,
	}
}

// providerRepository is the repository tpl gives the provider at addr
// (of the argument arg): --provider-template ADDRESS.
func providerRepository(c *cli.Context, tpl *repotemplate.Template, addr, arg string) (oci.Reference, names.Provider, error) {
	p, err := names.ParseProvider(addr)
	if err != nil {
		return oci.Reference{}, p, usageError(c, "%v", err)
	}
	ref, err := tpl.Expand(p.TemplateValues())
	if err != nil {
		return ref, p, fmt.Errorf("%s: %w", arg, err)
	}
	return ref, p, nil
}
