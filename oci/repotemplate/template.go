package repotemplate

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Template maps names to repositories, with the syntax of OpenTofu's
// oci_mirror repository_template: "${hostname}", "${namespace}", "${type}"
// for providers; "${namespace}", "${name}", "${system}" for modules. The
// expansion may be a registry repository or "oci-layout:PATH".
type Template struct {
	raw  string
	vars []string
	// spans are the placeholders' FindAllStringSubmatchIndex in raw,
	// found once: Expand runs for every repository a request reads.
	spans [][]int
}

var templateVar = regexp.MustCompile(`\$\{([a-z]+)\}`)

// ParseTemplate checks a template: every ${…} must be one of allowed, and
// every name in required must be used (so distinct names never share a
// repository).
func ParseTemplate(s string, allowed, required []string) (*Template, error) {
	if s == "" {
		return nil, fmt.Errorf("empty repository template")
	}
	t := &Template{raw: s, spans: templateVar.FindAllStringSubmatchIndex(s, -1)}
	for _, m := range templateVar.FindAllStringSubmatch(s, -1) {
		if !contains(allowed, m[1]) {
			return nil, fmt.Errorf("repository template %q: unknown placeholder ${%s} (allowed: %s)", s, m[1], placeholders(allowed))
		}
		t.vars = append(t.vars, m[1])
	}
	if rest := templateVar.ReplaceAllString(s, ""); strings.Contains(rest, "${") {
		return nil, fmt.Errorf("repository template %q: malformed placeholder", s)
	}
	for _, r := range required {
		if !contains(t.vars, r) {
			return nil, &MissingPlaceholderError{Template: s, Missing: r, Used: len(t.vars)}
		}
	}
	// Whatever it is given, the template must name a repository: try it
	// with example names now rather than fail every request later.
	example := map[string]string{"hostname": "example.com"}
	for _, v := range allowed {
		if v != "hostname" {
			example[v] = "example"
		}
	}
	if _, err := t.Expand(example); err != nil {
		return nil, fmt.Errorf("repository template %q does not give a repository (host[:port]/path or %sPATH): %w", s, oci.LayoutPrefix, err)
	}
	return t, nil
}

// MissingPlaceholderError is a template that lacks a required
// placeholder. Used counts the placeholders it has: none at all usually
// means a shell expanded them (to nothing) inside double quotes.
type MissingPlaceholderError struct {
	Template, Missing string
	Used              int
}

func (e *MissingPlaceholderError) Error() string {
	return fmt.Sprintf("repository template %q must use ${%s}", e.Template, e.Missing)
}

// Provider template placeholders.
var (
	ProviderTemplateVars     = []string{"hostname", "namespace", "type"}
	ProviderTemplateRequired = []string{"namespace", "type"}
	ModuleTemplateVars       = []string{"hostname", "namespace", "name", "system"}
	ModuleTemplateRequired   = []string{"namespace", "name", "system"}
)

// ParseProviderTemplate parses a provider repository template.
func ParseProviderTemplate(s string) (*Template, error) {
	return ParseTemplate(s, ProviderTemplateVars, ProviderTemplateRequired)
}

// ParseModuleTemplate parses a module repository template.
func ParseModuleTemplate(s string) (*Template, error) {
	return ParseTemplate(s, ModuleTemplateVars, ModuleTemplateRequired)
}

func (t *Template) String() string { return t.raw }

// validName is what may be substituted: registry repository path components
// are lower-case, so names are lower-cased; anything that could change the
// path's structure ("/", "..", ":", "@") is refused.
var validName = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

// Expand substitutes values and parses the result as a repository
// reference. Values are lower-cased (registries require lower-case
// repository names; OpenTofu's names are case-insensitive) and must be
// plain names; ${hostname} is a host name with an optional port, written
// as hostnameSegment says.
func (t *Template) Expand(values map[string]string) (oci.Reference, error) {
	var err error
	var b strings.Builder
	b.Grow(len(t.raw) + 64)
	last := 0
	for _, m := range t.spans {
		b.WriteString(t.raw[last:m[0]])
		last = m[1]
		name := t.raw[m[2]:m[3]]
		v := strings.ToLower(values[name])
		var valid bool
		if name == "hostname" {
			valid = names.ValidHostname(v)
			v = t.hostnameSegment(v, m[0])
		} else {
			valid = validName.MatchString(v)
		}
		if !valid && err == nil {
			err = fmt.Errorf("invalid %s %q", name, values[name])
		}
		b.WriteString(v)
	}
	b.WriteString(t.raw[last:])
	if err != nil {
		return oci.Reference{}, err
	}
	out := b.String()
	ref, perr := oci.ParseReference(out)
	if perr != nil {
		return oci.Reference{}, perr
	}
	if ref.Reference != "" {
		return oci.Reference{}, fmt.Errorf("repository template %q must not name a tag or digest", t.raw)
	}
	return ref, nil
}

// hostnameSegment is what ${hostname} (the host name h, with an optional
// port) becomes at offset at of the template. As the registry host
// (before the template's first "/") it stays "host:port". Inside a
// repository or layout path, where a ":" is not allowed (or would read as
// a tag), the port's ":" becomes "_": "localhost:8443" is
// "localhost_8443". Host names never contain "_", so two host names
// never give one repository (docs/proxy.md, "How providers map to
// repositories").
func (t *Template) hostnameSegment(h string, at int) string {
	if !strings.HasPrefix(t.raw, oci.LayoutPrefix) && !strings.Contains(t.raw[:at], "/") {
		return h
	}
	return strings.Replace(h, ":", "_", 1)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func placeholders(list []string) string {
	var b []string
	for _, s := range list {
		b = append(b, "${"+s+"}")
	}
	return strings.Join(b, ", ")
}
