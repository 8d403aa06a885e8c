package moduledoc

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// file is one parsed configuration file.
type file struct {
	name string
	src  []byte
	json bool
	body hcl.Body
}

// rawModule collects a module's blocks, override files merged over
// primary files at the level of arguments (OpenTofu's module_merge.go).
type rawModule struct {
	vars      []*rawBlock
	outputs   []*rawBlock
	calls     []*rawBlock
	resources []*rawBlock
	terraform []*rawBlock
	providers []*rawBlock
	byKey     map[string]*rawBlock
	files     map[string]*file // by name
	blocks    int
	truncated bool
}

// rawBlock is a block's arguments (override arguments replacing primary
// ones) and, for variables, its validation blocks.
type rawBlock struct {
	kind     string
	labels   []string
	file     *file
	def      hcl.Range
	attrs    hcl.Attributes
	blocks   []*hcl.Block // validation or required_providers blocks
	override bool
}

var fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "terraform"},
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "output", LabelNames: []string{"name"}},
	{Type: "module", LabelNames: []string{"name"}},
	{Type: "resource", LabelNames: []string{"type", "name"}},
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "ephemeral", LabelNames: []string{"type", "name"}},
	{Type: "provider", LabelNames: []string{"name"}},
}}

var blockSchemas = map[string]*hcl.BodySchema{
	"variable": {
		Attributes: attrNames("description", "default", "type", "sensitive", "ephemeral", "const", "deprecated", "nullable"),
		Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
	},
	"output":    {Attributes: attrNames("description", "sensitive", "ephemeral", "deprecated")},
	"module":    {Attributes: attrNames("source", "version")},
	"resource":  {Attributes: attrNames("provider")},
	"data":      {Attributes: attrNames("provider")},
	"ephemeral": {Attributes: attrNames("provider")},
	"provider":  {Attributes: attrNames("version")},
	"terraform": {Attributes: attrNames("required_version"), Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}}},
}

func attrNames(names ...string) []hcl.AttributeSchema {
	out := make([]hcl.AttributeSchema, len(names))
	for i, n := range names {
		out[i] = hcl.AttributeSchema{Name: n}
	}
	return out
}

// readModule reads the module in dir.
func (r *reader) readModule(ctx context.Context, dir string) (*Module, error) {
	m := &Module{Path: strings.TrimPrefix(dir, "."), Files: []string{}}
	var diags []Diagnostic
	entries := r.list(dir, &diags)
	m.README = readme(entries)
	primary, override := configFiles(entries)
	parser := hclparse.NewParser()
	raw := &rawModule{byKey: map[string]*rawBlock{}, files: map[string]*file{}}
	for i, e := range append(primary, override...) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, d := r.parse(parser, e)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		m.Files = append(m.Files, e.path)
		diags = append(diags, raw.add(f, i >= len(primary))...)
	}
	diags = append(diags, m.decode(raw)...)
	m.Diagnostics = boundDiagnostics(diags)
	return m, nil
}

// parse reads and parses one file; a file nested deeper than MaxNesting
// is not parsed (the parser recurses once per level).
func (r *reader) parse(p *hclparse.Parser, e entry) (*file, []Diagnostic) {
	src, d := r.readFile(e)
	if d != nil {
		return nil, []Diagnostic{*d}
	}
	if depth, line := nesting(src); depth > MaxNesting {
		return nil, []Diagnostic{errorDiag("Nesting too deep", fmt.Sprintf("%s nests brackets more than %d deep, more than is read here", e.path, MaxNesting), &Pos{File: e.path, Line: line})}
	}
	f := &file{name: e.path, src: src, json: strings.HasSuffix(e.name, ".json")}
	var hf *hcl.File
	var diags hcl.Diagnostics
	if f.json {
		hf, diags = p.ParseJSON(src, e.path)
	} else {
		hf, diags = p.ParseHCL(src, e.path)
	}
	if diags.HasErrors() {
		return nil, fromHCL(diags)
	}
	f.body = hf.Body
	return f, fromHCL(diags)
}

// nesting is the deepest bracket nesting in src and the line it is
// reached on, counting (, [ and { wherever they are, in strings and
// comments too: an over-estimate is safe, and skipping what looks like a
// comment would let brackets after a # in a string through uncounted.
func nesting(src []byte) (deepest, line int) {
	depth, ln := 0, 1
	for _, c := range src {
		switch c {
		case '(', '[', '{':
			if depth++; depth > deepest {
				deepest, line = depth, ln
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		case '\n':
			ln++
		}
	}
	return deepest, line
}

// add adds a file's blocks; an override file's arguments replace those of
// the block they override.
func (raw *rawModule) add(f *file, override bool) []Diagnostic {
	raw.files[f.name] = f
	content, _, hd := f.body.PartialContent(fileSchema)
	diags := fromHCL(hd)
	for _, b := range content.Blocks {
		if raw.blocks++; raw.blocks > MaxBlocks {
			if !raw.truncated {
				raw.truncated = true
				diags = append(diags, errorDiag("Too many blocks", fmt.Sprintf("the module has more than %d blocks; the rest, from %s on, are left out", MaxBlocks, posOf(b.DefRange)), posPtr(b.DefRange)))
			}
			return diags
		}
		rb, d := decodeRaw(f, b)
		diags = append(diags, d...)
		if rb == nil {
			continue
		}
		raw.blocks += len(rb.blocks)
		rb.override = override
		diags = append(diags, raw.place(rb, override)...)
	}
	return diags
}

// decodeRaw takes the arguments and nested blocks of b that the
// interface shows.
func decodeRaw(f *file, b *hcl.Block) (*rawBlock, []Diagnostic) {
	content, _, hd := b.Body.PartialContent(blockSchemas[b.Type])
	rb := &rawBlock{kind: b.Type, labels: b.Labels, file: f, def: b.DefRange, attrs: content.Attributes, blocks: content.Blocks}
	return rb, fromHCL(hd)
}

// place files a block under its kind and name, merging an override.
func (raw *rawModule) place(rb *rawBlock, override bool) []Diagnostic {
	switch rb.kind {
	case "terraform":
		raw.terraform = append(raw.terraform, rb)
		return nil
	case "provider":
		raw.providers = append(raw.providers, rb)
		return nil
	}
	key := rb.kind + "." + strings.Join(rb.labels, ".")
	prev, dup := raw.byKey[key]
	switch {
	case override && !dup:
		return []Diagnostic{errorDiag("Missing base block for override", fmt.Sprintf("There is no %s %q for this override to override.", rb.kind, strings.Join(rb.labels, ".")), posPtr(rb.def))}
	case override:
		for name, a := range rb.attrs {
			prev.attrs[name] = a
		}
		return nil
	case dup:
		return []Diagnostic{errorDiag("Duplicate "+rb.kind+" block", fmt.Sprintf("%s %q was already declared at %s; this one is left out.", rb.kind, strings.Join(rb.labels, "."), posOf(prev.def)), posPtr(rb.def))}
	}
	raw.byKey[key] = rb
	switch rb.kind {
	case "variable":
		raw.vars = append(raw.vars, rb)
	case "output":
		raw.outputs = append(raw.outputs, rb)
	case "module":
		raw.calls = append(raw.calls, rb)
	default:
		raw.resources = append(raw.resources, rb)
	}
	return nil
}

func posOf(r hcl.Range) string { return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line) }

func posPtr(r hcl.Range) *Pos { p := pos(r); return &p }

func pos(r hcl.Range) Pos { return Pos{File: r.Filename, Line: r.Start.Line} }

// fromHCL converts HCL diagnostics.
func fromHCL(hd hcl.Diagnostics) []Diagnostic {
	var out []Diagnostic
	for _, d := range hd {
		sev := SeverityError
		if d.Severity == hcl.DiagWarning {
			sev = SeverityWarning
		}
		var p *Pos
		if d.Subject != nil {
			p = posPtr(*d.Subject)
		}
		out = append(out, Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail, Pos: p})
	}
	return out
}

// boundDiagnostics keeps at most MaxDiagnostics, saying how many were
// left out.
func boundDiagnostics(diags []Diagnostic) []Diagnostic {
	if len(diags) <= MaxDiagnostics {
		if diags == nil {
			return []Diagnostic{}
		}
		return diags
	}
	out := append([]Diagnostic{}, diags[:MaxDiagnostics-1]...)
	return append(out, errorDiag("Too many diagnostics", fmt.Sprintf("%d more diagnostics are left out", len(diags)-MaxDiagnostics+1), nil))
}
