package policy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/oci-tofu/oci-tofu/convert/cliconfig"
	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Bounds on what a policy file may be: it is read whole, and parsed by a
// recursive parser.
const (
	MaxFileBytes = 1 << 20
	MaxRules     = 10000
	maxNesting   = 32
	maxListItems = 1000
)

// Policy is a parsed policy file.
type Policy struct {
	denyByDefault bool
	// defaultWritten is whether the file says default = "…" (DefaultWritten).
	defaultWritten bool
	rules          []*rule
	index          *index    // decide.go
	facts          factRules // what min_age and signers need (signers.go)
	clients        []*Client // who may read what (clients.go)
	tokenOwners    map[[32]byte]*Client
	serial         uint64 // unique to this parse (Serial)
}

// serials number the policies parsed (Policy.Serial).
var serials atomic.Uint64

// rule is one provider, module or tofu block.
type rule struct {
	kind     names.Kind
	name     string
	pattern  string // normalised; "" for tofu
	versions string // as written
	spec     names.Constraints
	admits   *names.VersionSet // what spec admits, built once (nil without versions)
	deny     []names.Version
	// platforms, when non-nil, are the only platforms the rule allows.
	platforms map[string]bool
	// minAge, when positive, is the rule's cool-down (min_age, as written
	// in minAgeText); signers must all have signed (signers.go).
	minAge     time.Duration
	minAgeText string
	signers    []*Signer
	// deprecated, revoked and keep are its lifecycle blocks, in the
	// order of the file (lifecycle.go).
	deprecated, revoked, keep []*lifecycleBlock
	// vulns is its vulnerabilities block (vulns.go), or nil.
	vulns *Vulnerabilities
}

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "default"}, {Name: "trusted_root"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: string(names.KindProvider), LabelNames: []string{"pattern"}},
		{Type: string(names.KindModule), LabelNames: []string{"pattern"}},
		{Type: string(names.KindTofu)},
		{Type: "client", LabelNames: []string{"name"}},
	},
}

var ruleSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "name"}, {Name: "versions"}, {Name: "deny"}, {Name: "platforms"}, {Name: "min_age"}, {Name: "signers"}},
	Blocks:     append(slices.Clip(lifecycleBlockTypes), hcl.BlockHeaderSchema{Type: "vulnerabilities"}),
}

// Load reads and parses the policy file at path, refusing one larger than
// MaxFileBytes and anything but a regular file (a FIFO would block).
func Load(path string) (*Policy, error) {
	src, err := localfile.ReadBounded(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return Parse(src, path)
}

// Parse parses a policy file's content; filename is used in errors, which
// give the line and column of what is wrong, and its directory is where
// the key files signers name are read from (relative paths).
func Parse(src []byte, filename string) (*Policy, error) {
	if len(src) > MaxFileBytes {
		return nil, fmt.Errorf("%s: the policy is larger than %d bytes", filename, MaxFileBytes)
	}
	if line, col, ok := tooDeep(src); !ok {
		return nil, fmt.Errorf("%s:%d:%d: nested deeper than %d levels: a policy needs no such nesting", filename, line, col, maxNesting)
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	content, diags := file.Body.Content(rootSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	p := &Policy{}
	if a, ok := content.Attributes["default"]; ok {
		p.defaultWritten = true
		var d string
		if diags := gohcl.DecodeExpression(a.Expr, nil, &d); diags.HasErrors() {
			return nil, diagError(diags)
		}
		switch d {
		case "allow":
		case "deny":
			p.denyByDefault = true
		default:
			return nil, posError(a.Expr.Range(), fmt.Sprintf("default must be \"allow\" or \"deny\", not %q", d))
		}
	}
	var ruleBlocks, clientBlocks []*hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "client" {
			clientBlocks = append(clientBlocks, b)
		} else {
			ruleBlocks = append(ruleBlocks, b)
		}
	}
	if len(ruleBlocks) > MaxRules {
		return nil, posError(ruleBlocks[MaxRules].DefRange, fmt.Sprintf("the policy has %d rules, more than %d", len(ruleBlocks), MaxRules))
	}
	env := newParseEnv(filename)
	if err := p.addClients(clientBlocks, env); err != nil {
		return nil, err
	}
	if a, ok := content.Attributes["trusted_root"]; ok {
		if err := env.parseTrustedRoot(a); err != nil {
			return nil, err
		}
	}
	seen := map[string]hcl.Range{}
	for _, b := range ruleBlocks {
		r, err := parseRule(b, env)
		if err != nil {
			return nil, err
		}
		key := string(r.kind) + " " + r.name
		if prev, dup := seen[key]; dup {
			return nil, posError(b.DefRange, fmt.Sprintf("a %s rule named %q is already defined at line %d: rules are named for explanations and metrics, so names must differ", r.kind, r.name, prev.Start.Line))
		}
		seen[key] = b.DefRange
		p.rules = append(p.rules, r)
		p.facts.add(r)
	}
	p.index = newIndex(p.rules)
	p.serial = serials.Add(1)
	return p, nil
}

func parseRule(b *hcl.Block, env *parseEnv) (*rule, error) {
	r := &rule{kind: names.Kind(b.Type), name: b.Type}
	if len(b.Labels) == 1 {
		pat, err := parsePattern(r.kind, b.Labels[0])
		if err != nil {
			return nil, posError(b.LabelRanges[0], err.Error())
		}
		r.pattern, r.name = pat, b.Labels[0]
	}
	content, diags := b.Body.Content(ruleSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if a, ok := content.Attributes["name"]; ok {
		if err := decode(a, &r.name); err != nil {
			return nil, err
		}
		if strings.TrimSpace(r.name) == "" || len(r.name) > 128 {
			return nil, posError(a.Expr.Range(), "a rule's name must be 1 to 128 characters")
		}
	}
	if a, ok := content.Attributes["versions"]; ok {
		if err := decode(a, &r.versions); err != nil {
			return nil, err
		}
		spec, err := names.ParseConstraints(r.versions)
		if err != nil {
			return nil, posError(a.Expr.Range(), err.Error())
		}
		r.spec = spec
		if len(spec) > 0 {
			admits := names.Admitting(spec)
			r.admits = &admits
		}
	}
	if a, ok := content.Attributes["deny"]; ok {
		var list []string
		if err := decodeList(a, &list); err != nil {
			return nil, err
		}
		for _, s := range list {
			v, err := names.ParseVersion(s)
			if err != nil {
				return nil, posError(a.Expr.Range(), fmt.Sprintf("deny: %q is not a version: %v", s, err))
			}
			r.deny = append(r.deny, v)
		}
	}
	if a, ok := content.Attributes["platforms"]; ok {
		var list []string
		if err := decodeList(a, &list); err != nil {
			return nil, err
		}
		r.platforms = make(map[string]bool, len(list))
		for _, s := range list {
			pl, err := names.ParsePlatform(s)
			if err != nil {
				return nil, posError(a.Expr.Range(), fmt.Sprintf("platforms: %v", err))
			}
			r.platforms[pl.String()] = true
		}
	}
	var lifecycle hcl.Blocks
	for _, b := range content.Blocks {
		if b.Type != "vulnerabilities" {
			lifecycle = append(lifecycle, b)
		}
	}
	if err := parseLifecycle(r, lifecycle); err != nil {
		return nil, err
	}
	if err := parseVulnerabilities(r, content.Blocks); err != nil {
		return nil, err
	}
	return r, parseFactRules(r, content, env)
}

func decode(a *hcl.Attribute, target any) error {
	if diags := gohcl.DecodeExpression(a.Expr, nil, target); diags.HasErrors() {
		return diagError(diags)
	}
	return nil
}

func decodeList(a *hcl.Attribute, target *[]string) error {
	if err := decode(a, target); err != nil {
		return err
	}
	if len(*target) > maxListItems {
		return posError(a.Expr.Range(), fmt.Sprintf("%s has more than %d items", a.Name, maxListItems))
	}
	return nil
}

// parsePattern normalises a block's label: a provider pattern as
// oci_mirror's include/exclude (cliconfig.ParseMatchingPatterns), a
// module pattern "[hostname/]namespace/name/system", each segment a name
// or "*".
func parsePattern(kind names.Kind, s string) (string, error) {
	if kind == names.KindProvider {
		ps, err := cliconfig.ParseMatchingPatterns([]string{s})
		if err != nil {
			return "", err
		}
		return ps[0], nil
	}
	parts, ok := withDefaultHost(strings.Split(strings.ToLower(s), "/"))
	if !ok {
		return "", fmt.Errorf("invalid module pattern %q: must be [hostname/]namespace/name/system", s)
	}
	for _, part := range parts {
		if part != "*" && !validSegment(part) {
			return "", fmt.Errorf("invalid module pattern %q: %q is neither a name nor the wildcard *", s, part)
		}
	}
	return strings.Join(parts, "/"), nil
}

func validSegment(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// tooDeep reports the line and column (in bytes) at which brackets nest
// deeper than maxNesting, before the recursive parser sees the file.
// Brackets in strings count too: a policy has no use for so many.
func tooDeep(src []byte) (line, col int, ok bool) {
	depth := 0
	for i, c := range src {
		switch c {
		case '{', '[', '(':
			depth++
			if depth > maxNesting {
				return bytes.Count(src[:i], []byte("\n")) + 1, i - bytes.LastIndexByte(src[:i], '\n'), false
			}
		case '}', ']', ')':
			depth--
		}
	}
	return 0, 0, true
}

// diagError is the first error of diags, with its file, line and column.
func diagError(diags hcl.Diagnostics) error {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			return posError(*d.Subject, msg)
		}
		return errors.New(msg)
	}
	return errors.New(diags.Error())
}

func posError(r hcl.Range, msg string) error {
	return fmt.Errorf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, msg)
}
