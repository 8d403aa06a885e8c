package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

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
