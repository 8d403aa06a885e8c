package moduledoc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	tfaddr "github.com/opentofu/registry-address/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// decode fills m from the merged blocks.
func (m *Module) decode(raw *rawModule) []Diagnostic {
	var diags []Diagnostic
	m.Inputs, m.Outputs, m.ModuleCalls, m.Resources = []Input{}, []Output{}, []ModuleCall{}, []Resource{}
	for _, rb := range raw.vars {
		in, d := raw.input(rb)
		diags = append(diags, d...)
		m.Inputs = append(m.Inputs, in)
	}
	for _, rb := range raw.outputs {
		out, d := output(rb)
		diags = append(diags, d...)
		m.Outputs = append(m.Outputs, out)
	}
	for _, rb := range raw.calls {
		m.ModuleCalls = append(m.ModuleCalls, ModuleCall{
			Name:    rb.labels[0],
			Source:  raw.stringOrSource(rb.attrs["source"]),
			Version: raw.stringOrSource(rb.attrs["version"]),
			Pos:     pos(rb.def),
		})
	}
	for _, rb := range raw.resources {
		m.Resources = append(m.Resources, resource(rb))
	}
	var d []Diagnostic
	m.RequiredCore, m.RequiredProviders, d = raw.requirements(m.Resources)
	return append(diags, d...)
}

// input decodes a variable as OpenTofu's decodeVariableBlock does
// (internal/configs/named_values.go), without evaluating anything.
func (raw *rawModule) input(rb *rawBlock) (Input, []Diagnostic) {
	in := Input{Name: rb.labels[0], Nullable: true, Validations: []string{}, Pos: pos(rb.def)}
	var hd hcl.Diagnostics
	decodeAttr(rb.attrs["description"], &in.Description, &hd)
	decodeAttr(rb.attrs["sensitive"], &in.Sensitive, &hd)
	decodeAttr(rb.attrs["ephemeral"], &in.Ephemeral, &hd)
	decodeAttr(rb.attrs["nullable"], &in.Nullable, &hd)
	decodeAttr(rb.attrs["const"], &in.Const, &hd)
	if decodeAttr(rb.attrs["deprecated"], &in.Deprecated, &hd) && strings.TrimSpace(in.Deprecated) == "" {
		hd = append(hd, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid `deprecated` value", Detail: `The "deprecated" argument must not be empty.`, Subject: rb.attrs["deprecated"].Range.Ptr()})
	}
	ty, defaults := cty.DynamicPseudoType, (*typeexpr.Defaults)(nil)
	if a := rb.attrs["type"]; a != nil {
		in.Type = raw.typeAsWritten(a.Expr)
		ty, defaults = raw.variableType(a.Expr, &hd)
	}
	in.TypeJSON, _ = ctyjson.MarshalType(ty)
	if a := rb.attrs["default"]; a != nil {
		in.Default = defaultJSON(a, ty, defaults, &hd)
		if !in.Nullable && string(in.Default) == "null" {
			hd = append(hd, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value for variable", Detail: "A null default value is not valid when nullable=false.", Subject: a.Expr.Range().Ptr()})
		}
	} else {
		in.Required = true
	}
	if !rb.override {
		for _, vb := range rb.blocks {
			in.Validations = append(in.Validations, raw.validationMessage(vb, &hd))
		}
	}
	return in, fromHCL(hd)
}

// decodeAttr decodes a constant argument into target, reporting whether
// it was given.
func decodeAttr(a *hcl.Attribute, target any, hd *hcl.Diagnostics) bool {
	if a == nil {
		return false
	}
	*hd = append(*hd, gohcl.DecodeExpression(a.Expr, nil, target)...)
	return true
}

// typeAsWritten is a type constraint's source text (a JSON file's string).
func (raw *rawModule) typeAsWritten(expr hcl.Expression) string {
	if f := raw.files[expr.Range().Filename]; f != nil && f.json {
		if v, d := expr.Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return v.AsString()
		}
	}
	return raw.source(expr.Range())
}

// source is the text of a range.
func (raw *rawModule) source(r hcl.Range) string {
	f := raw.files[r.Filename]
	if f == nil || r.Start.Byte < 0 || r.End.Byte > len(f.src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return string(f.src[r.Start.Byte:r.End.Byte])
}

// variableType decodes a type constraint as OpenTofu's decodeVariableType
// does, refusing one nested deeper than MaxTypeDepth.
func (raw *rawModule) variableType(expr hcl.Expression, hd *hcl.Diagnostics) (cty.Type, *typeexpr.Defaults) {
	if depth, _ := nesting([]byte(raw.typeAsWritten(expr))); depth > MaxTypeDepth {
		*hd = append(*hd, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Type constraint too deep", Detail: fmt.Sprintf("This type constraint nests more than %d levels deep, more than is read here.", MaxTypeDepth), Subject: expr.Range().Ptr()})
		return cty.DynamicPseudoType, nil
	}
	if _, quoted := expr.(*hclsyntax.TemplateExpr); quoted {
		*hd = append(*hd, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid quoted type constraints", Detail: "Type constraints in quotes are the form of OpenTofu 0.11 and earlier; remove the quotes.", Subject: expr.Range().Ptr()})
		return cty.DynamicPseudoType, nil
	}
	switch hcl.ExprAsKeyword(expr) {
	case "list":
		return cty.List(cty.DynamicPseudoType), nil
	case "map":
		return cty.Map(cty.DynamicPseudoType), nil
	}
	ty, defaults, d := typeexpr.TypeConstraintWithDefaults(expr)
	*hd = append(*hd, d...)
	if d.HasErrors() {
		return cty.DynamicPseudoType, nil
	}
	return ty, defaults
}

// defaultJSON is a default value converted to the type constraint, its
// optional attributes' defaults applied, in cty's JSON encoding; nil when
// it is not a constant, does not convert or is larger than MaxDefaultSize.
func defaultJSON(a *hcl.Attribute, ty cty.Type, defaults *typeexpr.Defaults, hd *hcl.Diagnostics) json.RawMessage {
	val, d := a.Expr.Value(nil)
	*hd = append(*hd, d...)
	if d.HasErrors() {
		return nil
	}
	if defaults != nil && !val.IsNull() {
		val = defaults.Apply(val)
	}
	val, err := convert.Convert(val, ty)
	if err != nil {
		*hd = append(*hd, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value for variable", Detail: fmt.Sprintf("This default value is not compatible with the variable's type constraint: %v.", err), Subject: a.Expr.Range().Ptr()})
		return nil
	}
	if !val.IsWhollyKnown() {
		return nil
	}
	b, err := ctyjson.Marshal(val, val.Type())
	if err != nil {
		return nil
	}
	if len(b) > MaxDefaultSize {
		*hd = append(*hd, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Default value too large to show", Detail: fmt.Sprintf("The default value is %d bytes as JSON, more than the %d shown here.", len(b), MaxDefaultSize), Subject: a.Expr.Range().Ptr()})
		return nil
	}
	return b
}

// validationMessage is a validation block's error message: the text of
// a constant, else the source of the expression.
func (raw *rawModule) validationMessage(vb *hcl.Block, hd *hcl.Diagnostics) string {
	content, _, d := vb.Body.PartialContent(&hcl.BodySchema{Attributes: attrNames("error_message")})
	*hd = append(*hd, d...)
	a := content.Attributes["error_message"]
	if a == nil {
		return ""
	}
	return raw.stringOrSource(a)
}

// stringOrSource is a constant string argument's value, else its source
// text; "" when absent.
func (raw *rawModule) stringOrSource(a *hcl.Attribute) string {
	if a == nil {
		return ""
	}
	if v, d := a.Expr.Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		return v.AsString()
	}
	return raw.source(a.Expr.Range())
}

func output(rb *rawBlock) (Output, []Diagnostic) {
	out := Output{Name: rb.labels[0], Pos: pos(rb.def)}
	var hd hcl.Diagnostics
	decodeAttr(rb.attrs["description"], &out.Description, &hd)
	decodeAttr(rb.attrs["sensitive"], &out.Sensitive, &hd)
	decodeAttr(rb.attrs["ephemeral"], &out.Ephemeral, &hd)
	decodeAttr(rb.attrs["deprecated"], &out.Deprecated, &hd)
	return out, fromHCL(hd)
}

func resource(rb *rawBlock) Resource {
	r := Resource{Type: rb.labels[0], Name: rb.labels[1], Pos: pos(rb.def)}
	switch rb.kind {
	case "data":
		r.Mode, r.Address = "data", "data."+r.Type+"."+r.Name
	case "ephemeral":
		r.Mode, r.Address = "ephemeral", "ephemeral."+r.Type+"."+r.Name
	default:
		r.Mode, r.Address = "managed", r.Type+"."+r.Name
	}
	r.Provider, _, _ = strings.Cut(r.Type, "_")
	if a := rb.attrs["provider"]; a != nil {
		if t, d := hcl.AbsTraversalForExpr(a.Expr); !d.HasErrors() && len(t) > 0 {
			r.Provider = t.RootName()
		}
	}
	return r
}

// requirements are the terraform blocks' required_version and
// required_providers, override files replacing whole entries, then the
// providers that provider blocks and resources imply (with the
// deprecated version argument of provider blocks), as OpenTofu's
// ProviderRequirementsShallow counts them.
func (raw *rawModule) requirements(resources []Resource) ([]string, []ProviderRequirement, []Diagnostic) {
	core := []string{}
	var order []string
	byName := map[string]ProviderRequirement{}
	var hd hcl.Diagnostics
	for _, tb := range raw.terraform {
		if a := tb.attrs["required_version"]; a != nil {
			var v string
			if decodeAttr(a, &v, &hd) {
				core = append(core, v)
			}
		}
		for _, b := range tb.blocks {
			attrs, d := b.Body.JustAttributes()
			hd = append(hd, d...)
			for _, a := range sortedAttrs(attrs) {
				pr, ok := raw.providerRequirement(a, &hd)
				if !ok {
					continue
				}
				if _, seen := byName[pr.Name]; !seen {
					order = append(order, pr.Name)
				}
				byName[pr.Name] = pr
			}
		}
	}
	imply := func(name string, r hcl.Range) {
		if _, seen := byName[name]; !seen && name != "" {
			order = append(order, name)
			byName[name] = ProviderRequirement{Name: name, Address: impliedAddress(name), VersionConstraints: []string{}, Implied: true, Pos: pos(r)}
		}
	}
	for _, pb := range raw.providers {
		imply(pb.labels[0], pb.def)
		var v string
		if decodeAttr(pb.attrs["version"], &v, &hd) {
			pr := byName[pb.labels[0]]
			pr.VersionConstraints = append(pr.VersionConstraints, v)
			byName[pb.labels[0]] = pr
		}
	}
	for _, r := range resources {
		imply(r.Provider, hcl.Range{Filename: r.Pos.File, Start: hcl.Pos{Line: r.Pos.Line}})
	}
	prs := make([]ProviderRequirement, 0, len(order))
	for _, name := range order {
		prs = append(prs, byName[name])
	}
	return core, prs, fromHCL(hd)
}

// sortedAttrs are attrs in source order.
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := slices.Collect(maps.Values(attrs))
	slices.SortFunc(out, func(a, b *hcl.Attribute) int { return a.Range.Start.Byte - b.Range.Start.Byte })
	return out
}

// providerRequirement decodes one required_providers entry: an object
// with source and version, or (the old form) a version string.
func (raw *rawModule) providerRequirement(a *hcl.Attribute, hd *hcl.Diagnostics) (ProviderRequirement, bool) {
	pr := ProviderRequirement{Name: a.Name, VersionConstraints: []string{}, Pos: pos(a.Range)}
	if pairs, d := hcl.ExprMap(a.Expr); !d.HasErrors() {
		for _, kv := range pairs {
			switch hcl.ExprAsKeyword(kv.Key) {
			case "source":
				*hd = append(*hd, gohcl.DecodeExpression(kv.Value, nil, &pr.Source)...)
			case "version":
				var v string
				if d := gohcl.DecodeExpression(kv.Value, nil, &v); !d.HasErrors() {
					pr.VersionConstraints = append(pr.VersionConstraints, v)
				} else {
					*hd = append(*hd, d...)
				}
			}
		}
	} else {
		var v string
		if d := gohcl.DecodeExpression(a.Expr, nil, &v); d.HasErrors() {
			*hd = append(*hd, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid required_providers object", Detail: "A required_providers entry must be an object with source and version, or a version string.", Subject: a.Expr.Range().Ptr()})
			return pr, false
		}
		pr.VersionConstraints = append(pr.VersionConstraints, v)
	}
	pr.Address = providerAddress(pr.Name, pr.Source)
	return pr, true
}

// impliedAddress is the provider a local name implies without a
// required_providers entry: the builtin terraform provider, or
// hashicorp/<name>.
func impliedAddress(name string) string {
	if name == "terraform" {
		return "terraform.io/builtin/terraform"
	}
	return providerAddress(name, "")
}

// providerAddress is the full source address of a requirement, or "".
func providerAddress(name, source string) string {
	if source == "" {
		typ, err := tfaddr.ParseProviderPart(name)
		if err != nil {
			return ""
		}
		return tfaddr.NewProvider(tfaddr.DefaultProviderRegistryHost, "hashicorp", typ).String()
	}
	p, err := tfaddr.ParseProviderSource(source)
	if err != nil {
		return ""
	}
	return p.String()
}
