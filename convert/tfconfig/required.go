package tfconfig

import (
	"fmt"
	"strings"

	goversion "github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// requiredProviders is one required_providers block: local name → entry.
type requiredProviders struct {
	entries map[string]*requiredProvider
	rng     hcl.Range
}

// requiredProvider is one entry of required_providers. The address is
// resolved later, when the client (and so the default registry host) is
// known: source is the source string as written, or "" for the implied
// address of the local name.
type requiredProvider struct {
	name    string
	source  string
	version versionConstraint
	rng     hcl.Range
}

// versionConstraint is a version argument: the string as written (after
// go-version accepted it), or nothing.
type versionConstraint struct {
	set bool
	raw string
	rng hcl.Range
}

// decodeRequiredProviders reads a required_providers block as OpenTofu's
// decodeRequiredProvidersBlock does: legacy strings ("~> 1.0") and
// objects with source, version and configuration_aliases.
func decodeRequiredProviders(block *hcl.Block) (*requiredProviders, hcl.Diagnostics) {
	ret := &requiredProviders{entries: map[string]*requiredProvider{}, rng: block.DefRange}
	attrs, diags := block.Body.JustAttributes()
	if diags.HasErrors() {
		return ret, diags
	}
	for name, attr := range attrs {
		rp := &requiredProvider{name: name, rng: attr.Expr.Range()}
		if v, err := attr.Expr.Value(nil); err == nil && v.Type().IsPrimitiveType() {
			vc, d := decodeVersionAttr(attr)
			diags = append(diags, d...)
			if _, err := parseProviderPart(name); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid provider name", Detail: err.Error(), Subject: attr.Expr.Range().Ptr()})
				continue
			}
			rp.version = vc
			ret.entries[name] = rp
			continue
		}
		if d := checkLocalName(name, attr.Expr.Range()); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		d := rp.decodeObject(attr)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if rp.source == "" {
			if _, err := parseProviderPart(name); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid provider name", Detail: err.Error(), Subject: attr.Expr.Range().Ptr()})
				continue
			}
		}
		ret.entries[name] = rp
	}
	return ret, diags
}

// decodeObject reads the object form { source, version,
// configuration_aliases }.
func (rp *requiredProvider) decodeObject(attr *hcl.Attribute) hcl.Diagnostics {
	kvs, d := hcl.ExprMap(attr.Expr)
	if d.HasErrors() {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid required_providers object",
			Detail:   "required_providers entries must be strings or objects.",
			Subject:  attr.Expr.Range().Ptr(),
		}}
	}
	var diags hcl.Diagnostics
	for _, kv := range kvs {
		key, d := kv.Key.Value(nil)
		if d.HasErrors() || key.Type() != cty.String || key.IsNull() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid Attribute", Detail: "Invalid attribute name for a provider requirement.", Subject: kv.Key.Range().Ptr()})
			continue
		}
		switch key.AsString() {
		case "version":
			v, d := kv.Value.Value(nil)
			if d.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() || !v.IsKnown() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid version constraint", Detail: "Version must be specified as a string.", Subject: kv.Value.Range().Ptr()})
				continue
			}
			vc, d2 := checkVersionConstraint(v.AsString(), attr.Range, kv.Value.Range())
			diags = append(diags, d2...)
			rp.version = vc
		case "source":
			v, d := kv.Value.Value(nil)
			if d.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() || !v.IsKnown() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid source", Detail: "Source must be specified as a string.", Subject: kv.Value.Range().Ptr()})
				continue
			}
			if err := checkProviderSource(v.AsString()); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid provider source string", Detail: err.Error(), Subject: kv.Value.Range().Ptr()})
				continue
			}
			rp.source = v.AsString()
		case "configuration_aliases":
			diags = append(diags, checkConfigurationAliases(rp.name, kv.Value)...)
		default:
			return append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid required_providers object",
				Detail:   `required_providers objects can only contain "version", "source" and "configuration_aliases" attributes. To configure a provider, use a "provider" block.`,
				Subject:  kv.Key.Range().Ptr(),
			})
		}
	}
	return diags
}

// checkConfigurationAliases checks that each alias is name.alias for this
// provider's local name; aliases add no requirement of their own.
func checkConfigurationAliases(name string, expr hcl.Expression) hcl.Diagnostics {
	exprs, diags := hcl.ExprList(expr)
	if diags.HasErrors() {
		return diags
	}
	for _, e := range exprs {
		t, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() || len(t) != 2 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid configuration_aliases value",
				Detail:   "Configuration aliases can only contain references to local provider configuration names in the format of provider.alias",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		if t.RootName() != name {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid configuration_aliases value",
				Detail:   fmt.Sprintf("Configuration aliases must be prefixed with the provider name. Expected %q, but found %q.", name, t.RootName()),
				Subject:  e.Range().Ptr(),
			})
		}
	}
	return diags
}

// decodeVersionAttr reads a version argument as OpenTofu's
// decodeVersionConstraint does: any primitive converted to a string, null
// meaning no constraint.
func decodeVersionAttr(attr *hcl.Attribute) (versionConstraint, hcl.Diagnostics) {
	s, isNull, ok := stringValue(attr.Expr)
	if !ok {
		return versionConstraint{}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid version constraint",
			Detail:   fmt.Sprintf("A string value is required for %s.", attr.Name),
			Subject:  attr.Expr.Range().Ptr(),
		}}
	}
	if isNull {
		return versionConstraint{}, nil
	}
	return checkVersionConstraint(s, attr.Range, attr.Expr.Range())
}

// checkVersionConstraint applies the first of OpenTofu's two constraint
// parsers: the configuration loader's (hashicorp/go-version), which refuses
// "" among others. The second (Ruby-style, apparentlymart/go-versions) runs
// when requirements are collected: see parsedConstraints.
func checkVersionConstraint(s string, declRange, exprRange hcl.Range) (versionConstraint, hcl.Diagnostics) {
	if len(s) > 4096 {
		return versionConstraint{}, invalidConstraint(exprRange)
	}
	if _, err := goversion.NewConstraint(s); err != nil {
		return versionConstraint{}, invalidConstraint(exprRange)
	}
	return versionConstraint{set: true, raw: s, rng: declRange}, nil
}

func invalidConstraint(rng hcl.Range) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Invalid version constraint",
		Detail:   "This string does not use correct version constraint syntax.",
		Subject:  rng.Ptr(),
	}}
}

// parsedConstraints parses a checked constraint with the Ruby-style parser
// OpenTofu selects versions with; the two parsers disagree on a few
// strings, and tofu reports those when collecting requirements.
func (vc versionConstraint) parsedConstraints() (names.Constraints, hcl.Diagnostics) {
	if !vc.set {
		return nil, nil
	}
	c, err := names.ParseConstraints(vc.raw)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid version constraint",
			Detail:   fmt.Sprintf("Incorrect version constraint syntax: %s.", err),
			Subject:  vc.rng.Ptr(),
		}}
	}
	return c, nil
}

// parseProviderPart checks a provider local name, namespace or type as
// OpenTofu's ParseProviderPart does (for the ASCII names OCI repositories
// can hold), returning it lower-cased.
func parseProviderPart(s string) (string, error) {
	switch {
	case s == "":
		return "", fmt.Errorf("must have at least one character")
	case strings.Contains(s, "."):
		return "", fmt.Errorf("dots are not allowed")
	case strings.Contains(s, "--"):
		return "", fmt.Errorf("cannot use multiple consecutive dashes")
	}
	lower := strings.ToLower(s)
	if !names.ValidProviderPart(lower) {
		return "", fmt.Errorf("must contain only letters, digits, and dashes, and may not use leading or trailing dashes")
	}
	return lower, nil
}

// checkLocalName requires a provider local name to be valid and already
// normalized (lower-case), as OpenTofu's checkProviderNameNormalized does.
func checkLocalName(name string, rng hcl.Range) hcl.Diagnostics {
	norm, err := parseProviderPart(name)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid provider local name", Detail: fmt.Sprintf("%s is an invalid provider local name: %s", name, err), Subject: rng.Ptr()}}
	}
	if norm != name {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid provider local name", Detail: fmt.Sprintf("Provider names must be normalized. Replace %q with %q to fix this error.", name, norm), Subject: rng.Ptr()}}
	}
	return nil
}

// checkProviderSource applies the rules of the clients' source address
// parsers that do not depend on the default host: shape, and the
// redundant "terraform-"/"opentofu-" type prefixes they refuse.
func checkProviderSource(s string) error {
	p, err := names.ParseProviderOn(s, names.OpenTofuRegistryHost)
	if err != nil {
		return fmt.Errorf(`the "source" attribute must be in the format "[hostname/][namespace/]name": %v`, err)
	}
	for _, prefix := range []string{"terraform-", "opentofu-"} {
		if strings.HasPrefix(p.Type, prefix) {
			return fmt.Errorf("provider source %q has a type with the prefix %q, which isn't allowed", s, prefix)
		}
	}
	return nil
}

// address resolves a required_providers entry to a provider address on
// the client's default registry.
func (rp *requiredProvider) address(c Client) names.Provider {
	if rp.source == "" {
		return impliedProvider(strings.ToLower(rp.name), c)
	}
	p, err := names.ParseProviderOn(rp.source, c.RegistryHost())
	if err != nil {
		return names.Provider{} // checked when decoding
	}
	return p
}

// impliedProvider is the address both clients give a local name that no
// required_providers entry declares: hashicorp/<name> on the default
// registry, except "terraform", which is built in.
func impliedProvider(localName string, c Client) names.Provider {
	if localName == "terraform" {
		return builtinProvider
	}
	return names.Provider{Hostname: c.RegistryHost(), Namespace: "hashicorp", Type: localName}
}
