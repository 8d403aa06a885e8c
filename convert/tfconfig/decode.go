package tfconfig

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// file is what one configuration file contributes to provider
// requirements, decoded as OpenTofu's loadConfigFileBody decodes it.
type file struct {
	requiredProviders []*requiredProviders
	providers         []*providerConfig
	resources         []*resource
	calls             []*moduleCall
	imports           []*importBlock
}

// providerConfig is a provider block: its local name, alias and the
// deprecated version argument.
type providerConfig struct {
	name, alias string
	version     versionConstraint
	rng         hcl.Range
}

func (p *providerConfig) key() string {
	if p.alias != "" {
		return p.name + "." + p.alias
	}
	return p.name
}

// resource is a resource, data or ephemeral block: its type and the local
// name of the provider configuration it names, if any.
type resource struct {
	mode, typ, name string
	provider        string // local name from the provider argument, or ""
	rng             hcl.Range
}

func (r *resource) key() string { return r.mode + "." + r.typ + "." + r.name }

// moduleCall is a module block.
type moduleCall struct {
	name        string
	source      hcl.Expression // nil when absent
	versionAttr *hcl.Attribute
	rng         hcl.Range
}

// importBlock is an import block: the resource type it imports into and
// its provider argument.
type importBlock struct {
	resourceType string
	inModule     bool
	provider     string
	rng          hcl.Range
}

var configFileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "language"},
		{Type: "required_providers"},
		{Type: "provider", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "data", LabelNames: []string{"type", "name"}},
		{Type: "ephemeral", LabelNames: []string{"type", "name"}},
		{Type: "moved"},
		{Type: "import"},
		{Type: "check", LabelNames: []string{"name"}},
		{Type: "removed"},
		{Type: "terraform"},
	},
}

var terraformBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "required_version"}, {Name: "experiments"}, {Name: "language"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}},
		{Type: "cloud"},
		{Type: "required_providers"},
		{Type: "provider_meta", LabelNames: []string{"provider"}},
		{Type: "encryption"},
	},
}

// decodeFile decodes the parts of a configuration file that decide
// provider requirements, with OpenTofu's schema: an unknown block type is
// an error, as it is for tofu.
func decodeFile(body hcl.Body, override bool, c Client) (*file, hcl.Diagnostics) {
	f := &file{}
	content, diags := body.Content(configFileSchema)
	for _, block := range content.Blocks {
		switch block.Type {
		case "terraform":
			diags = append(diags, f.decodeTerraformBlock(block)...)
		case "required_providers":
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid required_providers block",
				Detail:   `A "required_providers" block must be nested inside a "terraform" block.`,
				Subject:  block.TypeRange.Ptr(),
			})
		case "provider":
			p, d := decodeProviderBlock(block, c)
			diags = append(diags, d...)
			if p != nil {
				f.providers = append(f.providers, p)
			}
		case "module":
			c, d := decodeModuleBlock(block, override)
			diags = append(diags, d...)
			f.calls = append(f.calls, c)
		case "resource", "data", "ephemeral":
			r, d := decodeResourceBlock(block, block.Type, c)
			diags = append(diags, d...)
			if r != nil {
				f.resources = append(f.resources, r)
			}
		case "check":
			rs, d := decodeCheckBlock(block, c)
			diags = append(diags, d...)
			f.resources = append(f.resources, rs...)
		case "import":
			i, d := decodeImportBlock(block, c)
			diags = append(diags, d...)
			if i != nil {
				f.imports = append(f.imports, i)
			}
		}
	}
	return f, diags
}

func (f *file) decodeTerraformBlock(block *hcl.Block) hcl.Diagnostics {
	content, diags := block.Body.Content(terraformBlockSchema)
	for _, inner := range content.Blocks {
		if inner.Type == "required_providers" {
			rp, d := decodeRequiredProviders(inner)
			diags = append(diags, d...)
			f.requiredProviders = append(f.requiredProviders, rp)
		}
	}
	return diags
}

var providerBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "alias"}, {Name: "version"}, {Name: "for_each"}, {Name: "count"}, {Name: "depends_on"}, {Name: "source"}},
}

// reservedProviderArguments are the provider block arguments each client
// refuses: Terraform has no provider for_each (OpenTofu 1.9 added it).
func reservedProviderArguments(c Client) []string {
	if c.orDefault() == Terraform {
		return []string{"count", "depends_on", "for_each", "source"}
	}
	return []string{"count", "depends_on", "source"}
}

func decodeProviderBlock(block *hcl.Block, c Client) (*providerConfig, hcl.Diagnostics) {
	content, _, diags := block.Body.PartialContent(providerBlockSchema)
	name := block.Labels[0]
	if d := checkLocalName(name, block.DefRange); d.HasErrors() {
		return nil, append(diags, d...)
	}
	p := &providerConfig{name: name, rng: block.DefRange}
	if attr, ok := content.Attributes["alias"]; ok {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.Type() != cty.String || v.IsNull() || !hclsyntax.ValidIdentifier(v.AsString()) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid provider configuration alias",
					Detail:   "An alias must be a valid name.",
					Subject:  attr.Expr.Range().Ptr(),
				})
			} else {
				p.alias = v.AsString()
			}
		}
	}
	if attr, ok := content.Attributes["version"]; ok {
		var d hcl.Diagnostics
		p.version, d = decodeVersionAttr(attr)
		diags = append(diags, d...)
	}
	for _, name := range reservedProviderArguments(c) {
		if attr, ok := content.Attributes[name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Reserved argument name in provider block",
				Detail:   fmt.Sprintf("The provider argument name %q is reserved for use by %s in a future version.", name, c.product()),
				Subject:  &attr.NameRange,
			})
		}
	}
	if _, ok := content.Attributes["for_each"]; ok && p.alias == "" && c.orDefault() == Tofu {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  `Alias required when using "for_each"`,
			Detail:   "The for_each argument is allowed only for provider configurations with an alias.",
			Subject:  content.Attributes["for_each"].Expr.Range().Ptr(),
		})
	}
	return p, diags
}

var moduleBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "source", Required: true}, {Name: "version"}},
}

func decodeModuleBlock(block *hcl.Block, override bool) (*moduleCall, hcl.Diagnostics) {
	schema := moduleBlockSchema
	if override {
		schema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "version"}}}
	}
	content, _, diags := block.Body.PartialContent(schema)
	mc := &moduleCall{name: block.Labels[0], rng: block.DefRange}
	if !hclsyntax.ValidIdentifier(mc.name) {
		diags = append(diags, invalidName("Invalid module instance name", block.LabelRanges[0]))
	}
	if attr, ok := content.Attributes["source"]; ok {
		mc.source = attr.Expr
	}
	mc.versionAttr = content.Attributes["version"]
	return mc, diags
}

// invalidName is tofu's diagnostic for a block label that is not an
// identifier.
func invalidName(summary string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   "A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.",
		Subject:  &rng,
	}
}

var resourceBlockSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "provider"}}}

func decodeResourceBlock(block *hcl.Block, mode string, c Client) (*resource, hcl.Diagnostics) {
	content, _, diags := block.Body.PartialContent(resourceBlockSchema)
	r := &resource{mode: mode, typ: block.Labels[0], name: block.Labels[1], rng: block.DefRange}
	if !hclsyntax.ValidIdentifier(r.typ) {
		diags = append(diags, invalidName("Invalid resource type name", block.LabelRanges[0]))
	}
	if attr, ok := content.Attributes["provider"]; ok {
		name, d := decodeProviderRef(attr.Expr, "provider", c)
		diags = append(diags, d...)
		r.provider = name
	}
	return r, diags
}

var checkBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "data", LabelNames: []string{"type", "name"}}}}

// decodeCheckBlock returns the scoped data sources of a check block.
func decodeCheckBlock(block *hcl.Block, c Client) ([]*resource, hcl.Diagnostics) {
	content, _, diags := block.Body.PartialContent(checkBlockSchema)
	var out []*resource
	for _, b := range content.Blocks {
		if len(out) > 0 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Multiple data resource blocks",
				Detail:   "This check block already has a data resource defined.",
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		r, d := decodeResourceBlock(b, "data", c)
		diags = append(diags, d...)
		if r != nil {
			out = append(out, r)
		}
	}
	return out, diags
}

var importBlockSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "to"}, {Name: "provider"}}}

func decodeImportBlock(block *hcl.Block, c Client) (*importBlock, hcl.Diagnostics) {
	content, _, diags := block.Body.PartialContent(importBlockSchema)
	imp := &importBlock{rng: block.DefRange}
	attr, ok := content.Attributes["to"]
	if !ok {
		return nil, diags // tofu reports the missing argument; nothing to require
	}
	typ, inModule, ok := importTarget(attr.Expr)
	if !ok {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid import address",
			Detail:   "The import block's to argument must be a resource address.",
			Subject:  attr.Expr.Range().Ptr(),
		})
	}
	imp.resourceType, imp.inModule = typ, inModule
	if pattr, ok := content.Attributes["provider"]; ok {
		if inModule {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid import provider argument",
				Detail:   "The provider argument can only be specified in import blocks that will generate configuration.\n\nUse the providers argument within the module block to configure providers for all resources within a module, including imported resources.",
				Subject:  pattr.Range.Ptr(),
			})
		}
		name, d := decodeProviderRef(pattr.Expr, "provider", c)
		diags = append(diags, d...)
		imp.provider = name
	}
	return imp, diags
}

// importTarget reads the resource type of an import block's to address
// (module.a[0].aws_instance.b["x"] imports an aws_instance), skipping
// module steps and instance keys, whatever expressions the keys are.
func importTarget(expr hcl.Expression) (typ string, inModule bool, ok bool) {
	expr, diags := jsonStringAsExpression(expr)
	if diags.HasErrors() {
		return "", false, false
	}
	var steps []string
	var walk func(e hcl.Expression) bool
	walk = func(e hcl.Expression) bool {
		switch x := e.(type) {
		case *hclsyntax.ScopeTraversalExpr:
			steps = append(steps, traversalNames(x.Traversal)...)
			return true
		case *hclsyntax.RelativeTraversalExpr:
			if !walk(x.Source) {
				return false
			}
			steps = append(steps, traversalNames(x.Traversal)...)
			return true
		case *hclsyntax.IndexExpr:
			return walk(x.Collection)
		}
		return false
	}
	if !walk(expr) {
		return "", false, false
	}
	for len(steps) >= 2 && steps[0] == "module" {
		steps, inModule = steps[2:], true
	}
	if len(steps) < 2 || steps[0] == "data" {
		return "", false, false
	}
	return steps[0], inModule, true
}

// traversalNames are the attribute names of a traversal, without its
// index steps.
func traversalNames(t hcl.Traversal) []string {
	var out []string
	for _, s := range t {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			out = append(out, s.Name)
		case hcl.TraverseAttr:
			out = append(out, s.Name)
		}
	}
	return out
}

// decodeProviderRef reads a provider configuration reference (aws,
// aws.west, aws.by_region[each.key] for tofu; a quoted "aws.west" is still
// read, with a deprecation warning) and returns its local name, with
// OpenTofu's checks.
func decodeProviderRef(expr hcl.Expression, argName string, c Client) (string, hcl.Diagnostics) {
	expr, diags := jsonStringAsExpression(expr)
	if diags.HasErrors() {
		return "", diags
	}
	maxLen := 3 // name.alias[const_key]
	if iex, ok := expr.(*hclsyntax.IndexExpr); ok && c.orDefault() == Tofu {
		maxLen = 2
		expr = iex.Collection
	}
	if c.orDefault() == Terraform {
		maxLen = 2 // Terraform has no provider instance keys
	}
	expr = unquoteTraversal(expr)
	traversal, travDiags := hcl.AbsTraversalForExpr(expr)
	if travDiags.HasErrors() || len(traversal) == 0 || len(traversal) > maxLen {
		detail := fmt.Sprintf("The %s argument requires a provider type name, optionally followed by a period and then a configuration alias and optional instance key.", argName)
		if c.orDefault() == Terraform {
			detail = fmt.Sprintf("The %s argument requires a provider type name, optionally followed by a period and then a configuration alias.", argName)
		}
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid provider configuration reference",
			Detail:   detail,
			Subject:  expr.Range().Ptr(),
		}}
	}
	name := traversal.RootName()
	if d := checkLocalName(name, traversal[0].SourceRange()); d.HasErrors() {
		return "", d
	}
	if len(traversal) > 1 {
		if _, ok := traversal[1].(hcl.TraverseAttr); !ok {
			return "", hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid provider configuration reference",
				Detail:   "Provider name must either stand alone or be followed by a period and then a configuration alias.",
				Subject:  traversal[1].SourceRange().Ptr(),
			}}
		}
	}
	return name, diags
}

// unquoteTraversal reads a reference written in quotes ("aws.west"), which
// both clients still accept with a deprecation warning (OpenTofu's
// shimTraversalInString); anything else passes through.
func unquoteTraversal(expr hcl.Expression) hcl.Expression {
	tmpl, ok := expr.(*hclsyntax.TemplateExpr)
	if !ok || len(tmpl.Parts) != 1 {
		return expr
	}
	if _, literal := tmpl.Parts[0].(*hclsyntax.LiteralValueExpr); !literal {
		return expr
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return expr
	}
	rng := expr.Range()
	start := rng.Start
	start.Column++
	start.Byte++
	traversal, d := hclsyntax.ParseTraversalAbs([]byte(v.AsString()), rng.Filename, start)
	if d.HasErrors() {
		return expr
	}
	return &hclsyntax.ScopeTraversalExpr{Traversal: traversal, SrcRange: rng}
}

// jsonStringAsExpression turns a JSON string holding an expression
// ("aws.west") into that native expression, as OpenTofu's
// hcl2shim.ConvertJSONExpressionToHCL does; native expressions pass through.
func jsonStringAsExpression(expr hcl.Expression) (hcl.Expression, hcl.Diagnostics) {
	if !hcljson.IsJSONExpression(expr) {
		return expr, nil
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return expr, diags
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return expr, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid expression",
			Detail:   "A string holding an expression is required here.",
			Subject:  expr.Range().Ptr(),
		}}
	}
	rng := expr.Range()
	return hclsyntax.ParseExpression([]byte(v.AsString()), rng.Filename, rng.Start)
}

// stringValue evaluates a constant expression as a string, converting
// primitives ("1" for 1) as OpenTofu does for version arguments; ok is
// false when the expression is not constant.
func stringValue(expr hcl.Expression) (s string, isNull bool, ok bool) {
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return "", false, false
	}
	if v.IsNull() {
		return "", true, true
	}
	v, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", false, false
	}
	return v.AsString(), false, true
}
