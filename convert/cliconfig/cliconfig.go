// Package cliconfig reads the parts of an OpenTofu CLI configuration that
// oci-tofu shares with tofu: the provider_installation block, its
// oci_mirror blocks above all. It reads them as tofu 1.12 does
// (internal/command/cliconfig): the file with HCL 1, repository_template
// as an HCL 2 template, include/exclude patterns with tofu's pattern rules,
// and every check tofu makes before it would install anything, so a file
// is accepted here exactly when tofu accepts it.
package cliconfig

import (
	"fmt"
	"strings"

	hcl1 "github.com/hashicorp/hcl"
	hclast "github.com/hashicorp/hcl/hcl/ast"
	regaddr "github.com/opentofu/registry-address/v2"
	"github.com/opentofu/svchost"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
)

// OCIMirror is an oci_mirror block of the provider_installation block.
type OCIMirror struct {
	// RepositoryTemplate is the template as written.
	RepositoryTemplate string
	// Template maps a provider to its repository as tofu would.
	Template *Template
	// Include and Exclude are the block's patterns, normalised to
	// "hostname/namespace/type" with "*" wildcards (short patterns on
	// registry.opentofu.org), as tofu matches them.
	Include, Exclude []string
	// Pos is where the block is, "FILE:LINE:COLUMN".
	Pos string
}

// ReadOCIMirrors reads the oci_mirror blocks, in order, from an OpenTofu CLI
// configuration file, refusing the file wherever tofu would report an
// error about its provider installation methods. Other blocks are not
// read. A file without oci_mirror blocks is an error.
func ReadOCIMirrors(path string) ([]OCIMirror, error) {
	src, err := localfile.ReadBounded(path, oci.MaxSmallFile)
	if err != nil {
		return nil, err
	}
	out, err := ParseOCIMirrors(src, path)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no provider_installation { oci_mirror { … } } block", path)
	}
	return out, nil
}

// ParseOCIMirrors is ReadOCIMirrors on the file's content.
func ParseOCIMirrors(src []byte, filename string) ([]OCIMirror, error) {
	file, err := hcl1.ParseBytes(src)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filename, err)
	}
	root, ok := file.Node.(*hclast.ObjectList)
	if !ok {
		return nil, fmt.Errorf("parsing %s: not a configuration body", filename)
	}
	d := &diagnostics{file: filename}
	var out []OCIMirror
	blocks := 0
	for _, block := range root.Items {
		if block.Keys[0].Token.Value() != "provider_installation" {
			continue
		}
		blocks++
		out = append(out, d.providerInstallation(block)...)
	}
	if blocks > 1 {
		d.add("No more than one provider_installation block may be specified")
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// diagnostics collects error messages, as tofu reports them.
type diagnostics struct {
	file string
	msgs []string
}

func (d *diagnostics) add(format string, args ...any) {
	d.msgs = append(d.msgs, fmt.Sprintf(format, args...))
}

func (d *diagnostics) err() error {
	if len(d.msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", d.file, strings.Join(d.msgs, "\n"))
}

// pos is a position in the file, "FILE:LINE:COLUMN".
func (d *diagnostics) pos(n hclast.Node) string {
	p := n.Pos()
	return fmt.Sprintf("%s:%d:%d", d.file, p.Line, p.Column)
}

// providerInstallation checks one provider_installation block as
// decodeProviderInstallationFromConfig does, and returns its oci_mirrors.
func (d *diagnostics) providerInstallation(block *hclast.ObjectItem) []OCIMirror {
	isJSON := block.Keys[0].Token.JSON
	if block.Assign.Line != 0 && !isJSON {
		d.add("The provider_installation block at %s must not be introduced with an equals sign.", d.pos(block))
		return nil
	}
	if len(block.Keys) > 1 && !isJSON {
		d.add("The provider_installation block at %s must not have any labels.", d.pos(block))
	}
	body, ok := block.Val.(*hclast.ObjectType)
	if !ok {
		d.add("The provider_installation block at %s must not be introduced with an equals sign.", d.pos(block))
		return nil
	}
	var out []OCIMirror
	methods := 0
	for _, m := range body.List.Items {
		if m.Assign.Line != 0 && !isJSON {
			d.add("The items inside the provider_installation block at %s must all be blocks.", d.pos(block))
			continue
		}
		if len(m.Keys) > 1 && !isJSON {
			d.add("The blocks inside the provider_installation block at %s may not have any labels.", d.pos(block))
		}
		mb, ok := m.Val.(*hclast.ObjectType)
		if !ok {
			d.add("The items inside the provider_installation block at %s must all be blocks.", d.pos(block))
			continue
		}
		kind, _ := m.Keys[0].Token.Value().(string)
		include, exclude, mirror, ok := d.method(kind, block, m, mb, methods)
		if !ok {
			continue
		}
		if kind == "dev_overrides" {
			continue // not a method; no include/exclude
		}
		methods++
		inc, err := ParseMatchingPatterns(include)
		if err != nil {
			d.add("CLI config specifies invalid provider inclusion patterns: %s.", err)
			continue
		}
		exc, err := ParseMatchingPatterns(exclude)
		if err != nil {
			d.add("CLI config specifies invalid provider exclusion patterns: %s.", err)
			continue
		}
		if mirror != nil {
			mirror.Include, mirror.Exclude = inc, exc
			out = append(out, *mirror)
		}
	}
	return out
}

// method decodes one installation method block; ok is false when tofu
// reported an error for it.
func (d *diagnostics) method(kind string, block, m *hclast.ObjectItem, body *hclast.ObjectType, before int) (include, exclude []string, mirror *OCIMirror, ok bool) {
	switch kind {
	case "direct":
		include, exclude, ok = d.direct(block, body)
	case "filesystem_mirror":
		include, exclude, ok = d.filesystemMirror(block, body)
	case "network_mirror":
		include, exclude, ok = d.networkMirror(block, body)
	case "oci_mirror":
		return d.ociMirror(body)
	case "dev_overrides":
		ok = d.devOverrides(block, m, body, before)
	default:
		d.add("Unknown provider installation method %q at %s.", kind, d.pos(m))
	}
	return include, exclude, nil, ok
}

// decode decodes a method block's body into v, reporting tofu's error.
func (d *diagnostics) decode(kind string, block *hclast.ObjectItem, body *hclast.ObjectType, v any) bool {
	if err := hcl1.DecodeObject(v, body); err != nil {
		d.add("Invalid %s block at %s: %s.", kind, d.pos(block), err)
		return false
	}
	return true
}

// required reports a method's missing required argument.
func (d *diagnostics) required(kind, arg string, block *hclast.ObjectItem) bool {
	d.add("Invalid %s block at %s: %q argument is required.", kind, d.pos(block), arg)
	return false
}

func (d *diagnostics) direct(block *hclast.ObjectItem, body *hclast.ObjectType) ([]string, []string, bool) {
	var c struct {
		Include         []string `hcl:"include"`
		Exclude         []string `hcl:"exclude"`
		DownloadRetries *int     `hcl:"download_retry_count"`
	}
	ok := d.decode("direct", block, body, &c)
	return c.Include, c.Exclude, ok
}

func (d *diagnostics) filesystemMirror(block *hclast.ObjectItem, body *hclast.ObjectType) ([]string, []string, bool) {
	var c struct {
		Path    string   `hcl:"path"`
		Include []string `hcl:"include"`
		Exclude []string `hcl:"exclude"`
	}
	if !d.decode("filesystem_mirror", block, body, &c) {
		return nil, nil, false
	}
	if c.Path == "" {
		return nil, nil, d.required("filesystem_mirror", "path", block)
	}
	return c.Include, c.Exclude, true
}

func (d *diagnostics) networkMirror(block *hclast.ObjectItem, body *hclast.ObjectType) ([]string, []string, bool) {
	var c struct {
		URL             string   `hcl:"url"`
		Include         []string `hcl:"include"`
		Exclude         []string `hcl:"exclude"`
		DownloadRetries *int     `hcl:"download_retry_count"`
		Trusted         bool     `hcl:"trust_all_hashes"`
	}
	if !d.decode("network_mirror", block, body, &c) {
		return nil, nil, false
	}
	if c.URL == "" {
		return nil, nil, d.required("network_mirror", "url", block)
	}
	return c.Include, c.Exclude, true
}

// devOverrides checks a dev_overrides block: first of all methods, and
// its keys provider source addresses.
func (d *diagnostics) devOverrides(block, m *hclast.ObjectItem, body *hclast.ObjectType, before int) bool {
	if before > 0 {
		d.add("The dev_overrides block at at %s must appear before all other installation methods, because development overrides always have the highest priority.", d.pos(m))
		return false
	}
	var raw map[string]string
	if !d.decode("dev_overrides", block, body, &raw) {
		return false
	}
	for addr := range raw {
		if _, err := regaddr.ParseProviderSource(addr); err != nil {
			d.add("The entry %q in %s is not a valid provider source string.\n\n%s", addr, d.pos(block), err)
		}
	}
	return true
}

// ociMirror decodes an oci_mirror block as
// decodeOCIMirrorInstallationMethodBlock does.
func (d *diagnostics) ociMirror(body *hclast.ObjectType) (include, exclude []string, mirror *OCIMirror, ok bool) {
	var c struct {
		RepositoryTemplate string   `hcl:"repository_template"`
		Include            []string `hcl:"include"`
		Exclude            []string `hcl:"exclude"`
	}
	pos := d.pos(body)
	if err := hcl1.DecodeObject(&c, body); err != nil {
		d.add("Invalid oci_mirror block at %s: %s.", pos, err)
		return nil, nil, nil, false
	}
	if c.RepositoryTemplate == "" {
		d.add("Invalid oci_mirror block at %s: \"repository_template\" argument is required.", pos)
		return nil, nil, nil, false
	}
	tpl, msgs := parseTemplate(c.RepositoryTemplate, c.Include, pos)
	if len(msgs) > 0 {
		d.msgs = append(d.msgs, msgs...)
		return nil, nil, nil, false
	}
	return c.Include, c.Exclude, &OCIMirror{RepositoryTemplate: c.RepositoryTemplate, Template: tpl, Pos: pos}, true
}

// wildcard is a pattern segment matching anything.
const wildcard = "*"

type pattern struct{ host, namespace, typ string }

// ParseMatchingPatterns reads include or exclude patterns as tofu does
// (getproviders.ParseMultiSourceMatchingPatterns): "namespace/type" on
// registry.opentofu.org or "hostname/namespace/type", each segment a name
// or the wildcard "*" — a wildcard host only with wildcard namespace and
// type, a wildcard namespace only with a wildcard type. It returns them
// normalised ("hostname/namespace/type", lower-case), so that a path.Match
// of a provider address is tofu's match.
func ParseMatchingPatterns(patterns []string) ([]string, error) {
	ps, err := parsePatterns(patterns)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.host + "/" + p.namespace + "/" + p.typ
	}
	return out, nil
}

func parsePatterns(strs []string) ([]pattern, error) {
	out := make([]pattern, len(strs))
	for i, s := range strs {
		parts := strings.Split(s, "/")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("invalid provider matching pattern %q: must have either two or three slash-separated segments", s)
		}
		host := regaddr.DefaultProviderRegistryHost.String()
		if len(parts) == 3 {
			if parts[0] == wildcard {
				host = wildcard
			} else {
				h, err := svchost.ForComparison(parts[0])
				if err != nil {
					return nil, fmt.Errorf("invalid hostname in provider matching pattern %q: %w", s, err)
				}
				host = h.String()
			}
			parts = parts[1:]
		}
		typ, err := partOrWildcard(parts[1])
		if err != nil {
			return nil, fmt.Errorf("invalid provider type %q in provider matching pattern %q: must either be the wildcard * or a provider type name", parts[1], s)
		}
		namespace, err := partOrWildcard(parts[0])
		if err != nil {
			return nil, fmt.Errorf("invalid registry namespace %q in provider matching pattern %q: must either be the wildcard * or a literal namespace", parts[1], s)
		}
		if host == wildcard && (namespace != wildcard || typ != wildcard) {
			return nil, fmt.Errorf("invalid provider matching pattern %q: hostname can be a wildcard only if both namespace and provider type are also wildcards", s)
		}
		if namespace == wildcard && typ != wildcard {
			return nil, fmt.Errorf("invalid provider matching pattern %q: namespace can be a wildcard only if the provider type is also a wildcard", s)
		}
		out[i] = pattern{host: host, namespace: namespace, typ: typ}
	}
	return out, nil
}

func partOrWildcard(s string) (string, error) {
	if s == wildcard {
		return s, nil
	}
	return regaddr.ParseProviderPart(s)
}
