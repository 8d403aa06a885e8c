package cliconfig

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Template is an oci_mirror repository_template: an HCL template over
// hostname, namespace and type, expanded per provider as tofu expands it.
type Template struct {
	raw  string
	expr hclsyntax.Expression
}

// String is the template as written.
func (t *Template) String() string { return t.raw }

// Expand evaluates the template for a provider (values "hostname",
// "namespace", "type") and reads the result as a registry repository,
// without tag or digest, as tofu's ParseRepositoryAddressPrefix does.
func (t *Template) Expand(values map[string]string) (oci.Reference, error) {
	s, err := evalTemplate(t.expr, cty.StringVal(values["hostname"]), cty.StringVal(values["namespace"]), cty.StringVal(values["type"]))
	if err != nil {
		return oci.Reference{}, fmt.Errorf("repository template %q: %w", t.raw, err)
	}
	return repositoryAddress(s)
}

// repositoryAddress reads a template's result: a registry host, a slash
// and a repository name, without tag or digest. An OCI layout is no
// registry: tofu would look for a registry host named "oci-layout:".
func repositoryAddress(s string) (oci.Reference, error) {
	ref, err := repositoryAddressPrefix(s)
	if err != nil {
		return oci.Reference{}, err
	}
	if ref.Repository == "" {
		return oci.Reference{}, fmt.Errorf("invalid repository address %q: want a registry host name, a slash and a repository name", s)
	}
	if ref.Registry+":" == oci.LayoutPrefix {
		return oci.Reference{}, fmt.Errorf("repository address %q: an oci_mirror names a registry, not an OCI layout (tofu would look for a registry host %q; use --provider-template for layouts)", s, ref.Registry)
	}
	return ref, nil
}

// repositoryAddressPrefix is tofu's ParseRepositoryAddressPrefix: a
// registry host alone, or a registry reference without tag or digest, as
// oras-go parses them.
func repositoryAddressPrefix(s string) (oci.Reference, error) {
	if !strings.Contains(s, "/") {
		ref, err := oci.ParseRegistryReference(s + "/x")
		return oci.Reference{Registry: ref.Registry}, err
	}
	ref, err := oci.ParseRegistryReference(s)
	if err != nil {
		return oci.Reference{}, err
	}
	if ref.Reference != "" {
		return oci.Reference{}, fmt.Errorf("invalid reference: artifact tag or digest not allowed")
	}
	return ref, nil
}

// parseTemplate parses and checks a repository_template as
// prepareOCIMirrorRepositoryMapping does, returning tofu's messages.
func parseTemplate(raw string, include []string, pos string) (*Template, []string) {
	expr, diags := hclsyntax.ParseTemplate([]byte(raw), "<oci_mirror repository_template>", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, hclMessages(diags)
	}
	var msgs []string
	var has = map[string]bool{}
	for _, tr := range expr.Variables() {
		switch name := tr.RootName(); name {
		case "hostname", "namespace", "type":
			has[name] = true
		default:
			msgs = append(msgs, fmt.Sprintf("Invalid oci_mirror block at %s: the symbol %q is not available for an OCI mirror repository address template. Only \"hostname\", \"namespace\", and \"type\" are available.", pos, name))
		}
	}
	patterns, err := parsePatterns(include)
	if err != nil {
		// tofu reports invalid patterns once, when it builds the sources.
		return &Template{raw: raw, expr: expr}, msgs
	}
	hosts, namespaces, types := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range patterns {
		if p.host != wildcard {
			hosts[p.host] = true
		}
		if p.namespace != wildcard {
			namespaces[p.namespace] = true
		}
		if p.typ != wildcard {
			types[p.typ] = true
		}
	}
	if len(hosts) != 1 && !has["hostname"] {
		msgs = append(msgs, fmt.Sprintf("Invalid oci_mirror block at %s: template must refer to the \"hostname\" symbol unless the \"include\" argument selects exactly one registry hostname.", pos))
	}
	if len(namespaces) != 1 && !has["namespace"] {
		msgs = append(msgs, fmt.Sprintf("Invalid oci_mirror block at %s: template must refer to the \"namespace\" symbol unless the \"include\" argument selects exactly one provider namespace.", pos))
	}
	if len(types) != 1 && !has["type"] {
		msgs = append(msgs, fmt.Sprintf("Invalid oci_mirror block at %s: template must refer to the \"type\" symbol unless the \"include\" argument selects exactly one provider.", pos))
	}
	if len(msgs) > 0 {
		return nil, msgs
	}
	unknown := cty.UnknownVal(cty.String)
	if _, diags := expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"hostname": unknown, "namespace": unknown, "type": unknown}}); diags.HasErrors() {
		return nil, hclMessages(diags)
	}
	example, err := evalTemplate(expr, cty.StringVal("example.com"), cty.StringVal("example-namespace"), cty.StringVal("example-type"))
	if err != nil {
		return nil, []string{fmt.Sprintf("Invalid oci_mirror block at %s: %s.", pos, err)}
	}
	if _, err := repositoryAddressPrefix(example); err != nil {
		return nil, []string{fmt.Sprintf("Invalid oci_mirror block at %s: template must generate a valid OCI repository address, including a registry hostname followed by a slash and then a repository name.", pos)}
	}
	return &Template{raw: raw, expr: expr}, nil
}

// evalTemplate is evalOCIProviderMirrorRepositoryTemplate.
func evalTemplate(expr hclsyntax.Expression, hostname, namespace, typ cty.Value) (string, error) {
	val, diags := expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"hostname": hostname, "namespace": namespace, "type": typ}})
	if diags.HasErrors() {
		return "", errors.New(strings.Join(hclMessages(diags), "; "))
	}
	val, err := convert.Convert(val, cty.String)
	if err != nil {
		return "", errors.New("template must produce a string value")
	}
	if val.IsNull() {
		return "", errors.New("template must not produce a null value")
	}
	if !val.IsKnown() {
		return "", errors.New("template must produce a known value")
	}
	return val.AsString(), nil
}

func hclMessages(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d.Error())
		}
	}
	return out
}
