package catalog

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Usage is how a configuration calls the module: through this proxy's
// Module Registry Protocol (any tofu or Terraform), or straight from the
// registry with OpenTofu's oci:// source (tofu 1.10 and later, no proxy).
type Usage struct {
	// Registry is a module block with the address as clients write it
	// and a version constraint; OCI the same with the oci:// source,
	// pinned to the version's tag (oci:// has no constraints), "" for a
	// package in an OCI layout directory (oci:// reads registries only).
	Registry string `json:"registry"`
	OCI      string `json:"oci,omitempty"`
	// Constraint is the version constraint Registry uses: the loosest
	// that installs this version among those served now (constraintFor).
	Constraint string `json:"constraint"`
}

// usageOf is how to call module m (in dir of the package) of version v
// of a (address, as the client writes it), stored in repository, listed
// among the versions the protocol offers: the constraint picks v among
// them (constraintFor), and each required input is set to a placeholder
// of its type.
func usageOf(a source.ModuleAddress, address string, v names.Version, listed names.VersionList, repository, dir string, m *moduledoc.Module) *Usage {
	sub := ""
	if dir != "" {
		sub = "//" + dir
	}
	label := blockLabel(a.Module.Name)
	if dir != "" {
		label = blockLabel(dir[strings.LastIndexByte(dir, '/')+1:])
	}
	inputs := requiredInputs(m)
	c := constraintFor(v, listed)
	return &Usage{
		Constraint: c,
		Registry: fmt.Sprintf("module %s {\n  source  = %s\n  version = %s\n%s}\n",
			hclString(label), hclString(address+sub), hclString(c), inputs),
		OCI: fmt.Sprintf("module %s {\n  source = %s\n%s}\n",
			hclString(label), hclString("oci://"+repository+sub+"?tag="+names.TagForVersion(v)), inputs),
	}
}

// constraintFor is the loosest constraint a team would write that picks
// v among the versions listed (those the Module Registry Protocol offers
// now, v counted in): "~> X.Y" (this minor version's patches and later
// minors below X+1) from 1.0, else "~> X.Y.Z" (this version's patches;
// where 0.x starts, minor versions may break), else the exact version,
// which is also a pre-release's. Tofu installs the newest version a
// constraint admits, so "~> X.Y" for an older version would install a
// newer one. Without listed versions (a provider's snippet, which its
// lock block pins) it is the first that applies.
func constraintFor(v names.Version, listed names.VersionList) string {
	if v.Prerelease != "" {
		return v.String()
	}
	for _, c := range candidateConstraints(v) {
		if picks(c, v, listed) {
			return c
		}
	}
	return v.String()
}

// candidateConstraints are the constraints constraintFor tries for a
// release v, loosest first.
func candidateConstraints(v names.Version) []string {
	patches := fmt.Sprintf("~> %d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Major == 0 {
		return []string{patches}
	}
	return []string{fmt.Sprintf("~> %d.%d", v.Major, v.Minor), patches}
}

// picks says whether constraint c picks v among listed and v: no listed
// version newer than v meets it.
func picks(c string, v names.Version, listed names.VersionList) bool {
	spec, err := names.ParseConstraints(c)
	if err != nil {
		return false
	}
	for _, l := range listed {
		if l.GreaterThan(v) && names.Admits(spec, l) {
			return false
		}
	}
	return true
}

// requiredInputs are the lines setting each required input of m to a
// placeholder of its type, with the type and description as a comment.
func requiredInputs(m *moduledoc.Module) string {
	var b strings.Builder
	for _, in := range m.Inputs {
		if !in.Required || !hclsyntax.ValidIdentifier(in.Name) {
			continue
		}
		comment := oneLine(in.Type)
		if comment == "" {
			comment = "any"
		}
		if in.Description != "" {
			comment += ": " + firstLine(in.Description)
		}
		fmt.Fprintf(&b, "\n  %s = %s # %s\n", in.Name, placeholder(in.Type), comment)
	}
	return b.String()
}

// placeholder is a value of a type constraint's kind, as written.
func placeholder(typ string) string {
	t := strings.TrimSpace(typ)
	switch {
	case t == "string":
		return `""`
	case t == "number":
		return "0"
	case t == "bool":
		return "false"
	case strings.HasPrefix(t, "list"), strings.HasPrefix(t, "set"), strings.HasPrefix(t, "tuple"):
		return "[]"
	case strings.HasPrefix(t, "map"), strings.HasPrefix(t, "object"):
		return "{}"
	}
	return "null"
}

// blockLabel is name as a module block label: letters, digits, "_" and
// "-", starting with a letter or "_".
func blockLabel(name string) string {
	var b strings.Builder
	for i, r := range name {
		ok := r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok || i == 0 && (r == '-' || r >= '0' && r <= '9') {
			b.WriteByte('_')
		}
		if ok {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "this"
	}
	return b.String()
}

// oneLine is s (a type constraint as written, perhaps over several
// lines) on one line, for a comment: each run of white space one space,
// control characters dropped, at most 120 bytes.
func oneLine(s string) string {
	return firstLine(strings.Join(strings.Fields(s), " "))
}

// hclString is s as an HCL quoted string literal: quotes, backslashes
// and control characters escaped, and "${" and "%{" doubled so that
// nothing a package names (a directory) is read as a template.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && strings.HasPrefix(s[i+1:], "{"):
			b.WriteRune(r)
			b.WriteRune(r)
		case unicode.IsControl(r) || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// firstLine is s up to its first line break, at most 120 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > 120 {
		i := 120
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}
