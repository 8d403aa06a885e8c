// Package tfconfig reads OpenTofu and Terraform configurations as the
// clients do, for what `oci-tofu lock` needs: the providers a configuration
// requires and the version constraints on them.
package tfconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apparentlymart/go-versions/versions/constraints"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/zclconf/go-cty/cty"
)

// Requirement is one provider a configuration requires.
type Requirement struct {
	Addr        names.Provider
	Constraints constraints.IntersectionSpec
}

// RequiredProviders reads the required_providers blocks of the root module
// in dir (.tf, .tofu and their .json forms; a .tofu file hides the .tf file
// of the same name, as in OpenTofu). Constraints for the same provider from
// several blocks are combined.
func RequiredProviders(dir string) ([]Requirement, error) {
	files, err := configFiles(dir)
	if err != nil {
		return nil, err
	}
	parser := hclparse.NewParser()
	byAddr := map[names.Provider]*Requirement{}
	for _, path := range files {
		// Regular files only, bounded: a FIFO or a device named main.tf is
		// refused, not waited on.
		src, err := localfile.ReadBounded(path, oci.MaxLockFile)
		if err != nil {
			return nil, err
		}
		var f *hcl.File
		var diags hcl.Diagnostics
		if strings.HasSuffix(path, ".json") {
			f, diags = parser.ParseJSON(src, path)
		} else {
			f, diags = parser.ParseHCL(src, path)
		}
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s", diags.Error())
		}
		if err := readRequiredProviders(f.Body, byAddr); err != nil {
			return nil, err
		}
	}
	reqs := make([]Requirement, 0, len(byAddr))
	for _, r := range byAddr {
		reqs = append(reqs, *r)
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Addr.String() < reqs[j].Addr.String() })
	return reqs, nil
}

func configFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name()] = true
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || strings.HasSuffix(n, "~") {
			continue
		}
		switch {
		case strings.HasSuffix(n, ".tofu"), strings.HasSuffix(n, ".tofu.json"):
		case strings.HasSuffix(n, ".tf"):
			if present[strings.TrimSuffix(n, ".tf")+".tofu"] {
				continue
			}
		case strings.HasSuffix(n, ".tf.json"):
			if present[strings.TrimSuffix(n, ".tf.json")+".tofu.json"] {
				continue
			}
		default:
			continue
		}
		files = append(files, filepath.Join(dir, n))
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no .tf or .tofu files", dir)
	}
	return files, nil
}

var (
	rootSchema      = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}}
	terraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}}}
)

func readRequiredProviders(body hcl.Body, into map[names.Provider]*Requirement) error {
	content, _, diags := body.PartialContent(rootSchema)
	if diags.HasErrors() {
		return fmt.Errorf("%s", diags.Error())
	}
	for _, tb := range content.Blocks {
		tc, _, diags := tb.Body.PartialContent(terraformSchema)
		if diags.HasErrors() {
			return fmt.Errorf("%s", diags.Error())
		}
		for _, rb := range tc.Blocks {
			attrs, diags := rb.Body.JustAttributes()
			if diags.HasErrors() {
				return fmt.Errorf("%s", diags.Error())
			}
			for name, attr := range attrs {
				val, diags := attr.Expr.Value(nil)
				if diags.HasErrors() {
					return fmt.Errorf("%s", diags.Error())
				}
				source, version := name, ""
				switch {
				case val.Type() == cty.String && val.IsKnown() && !val.IsNull():
					version = val.AsString() // legacy: name = "~> 1.0"
				case val.Type().IsObjectType():
					var err error
					if source, err = stringAttr(val, "source", name); err != nil {
						return fmt.Errorf("%s: %w", attr.Range, err)
					}
					if version, err = stringAttr(val, "version", ""); err != nil {
						return fmt.Errorf("%s: %w", attr.Range, err)
					}
				default:
					return fmt.Errorf("%s: required_providers.%s must be an object", attr.Range, name)
				}
				addr, err := names.ParseProvider(source)
				if err != nil {
					return fmt.Errorf("%s: %w", attr.Range, err)
				}
				c, err := names.ParseConstraints(version)
				if err != nil {
					return fmt.Errorf("%s: %w", attr.Range, err)
				}
				r := into[addr]
				if r == nil {
					r = &Requirement{Addr: addr}
					into[addr] = r
				}
				r.Constraints = append(r.Constraints, c...)
			}
		}
	}
	return nil
}

// stringAttr reads an optional string attribute of an object value.
func stringAttr(obj cty.Value, name, def string) (string, error) {
	if !obj.Type().HasAttribute(name) {
		return def, nil
	}
	v := obj.GetAttr(name)
	if v.IsNull() {
		return def, nil
	}
	if !v.IsKnown() || v.Type() != cty.String {
		return "", fmt.Errorf("%s must be a string", name)
	}
	return v.AsString(), nil
}
