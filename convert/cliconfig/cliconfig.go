// Package cliconfig reads the parts of an OpenTofu CLI configuration that
// oci-tofu shares with tofu: the oci_mirror blocks of provider_installation.
package cliconfig

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/zclconf/go-cty/cty"
)

// OCIMirror is an oci_mirror block of an OpenTofu CLI configuration's
// provider_installation block.
type OCIMirror struct {
	RepositoryTemplate string   `hcl:"repository_template"`
	Include            []string `hcl:"include,optional"`
	Exclude            []string `hcl:"exclude,optional"`
}

// templateVars makes repository_template's ${hostname}, ${namespace} and
// ${type} (HCL template interpolations, as OpenTofu reads them) evaluate
// to themselves, giving back the template text.
var templateVars = &hcl.EvalContext{Variables: map[string]cty.Value{
	"hostname":  cty.StringVal("${hostname}"),
	"namespace": cty.StringVal("${namespace}"),
	"type":      cty.StringVal("${type}"),
}}

// ReadOCIMirrors reads the oci_mirror blocks, in order, from an OpenTofu CLI
// configuration file (HCL), so the proxy can map providers to repositories
// exactly as tofu clients configured with the same file would. Other
// blocks are ignored.
func ReadOCIMirrors(path string) ([]OCIMirror, error) {
	src, err := localfile.ReadBounded(path, oci.MaxSmallFile)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", diags.Error())
	}
	root, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provider_installation"}}})
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", diags.Error())
	}
	var out []OCIMirror
	for _, pi := range root.Blocks {
		content, _, diags := pi.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "oci_mirror"}}})
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s", diags.Error())
		}
		for _, b := range content.Blocks {
			var m OCIMirror
			if diags := gohcl.DecodeBody(b.Body, templateVars, &m); diags.HasErrors() {
				return nil, fmt.Errorf("%s", diags.Error())
			}
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no provider_installation { oci_mirror { … } } block", path)
	}
	return out, nil
}
