package store

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// RepositoryTemplate maps a provider's names ("hostname", "namespace",
// "type") to a repository: an *repotemplate.Template, or an oci_mirror block's HCL
// template (cliconfig.Template).
type RepositoryTemplate interface {
	Expand(values map[string]string) (oci.Reference, error)
	String() string
}

// ProviderMapping maps the provider addresses its filters cover to
// repositories, like an oci_mirror block of an OpenTofu CLI configuration.
type ProviderMapping struct {
	Template RepositoryTemplate
	// Include and Exclude are path.Match patterns on host/namespace/type;
	// an empty Include covers every address.
	Include, Exclude []string
	// Label says where the mapping was configured, for people
	// ("--provider-template", "tofu.rc:3:14").
	Label string
}

// ProviderMappings are mappings in order: an address maps through the
// first whose filters cover it.
type ProviderMappings []ProviderMapping

// CheckMappings validates mappings: every one needs a template, and every
// pattern must be a valid path.Match pattern. Patterns are lower-cased, as
// addresses are.
func CheckMappings(ms []ProviderMapping) (ProviderMappings, error) {
	out := make(ProviderMappings, len(ms))
	for i, m := range ms {
		if m.Template == nil || isNilTemplate(m.Template) {
			return nil, fmt.Errorf("provider mapping %d has no repository template", i+1)
		}
		out[i] = ProviderMapping{Template: m.Template, Include: lower(m.Include), Exclude: lower(m.Exclude), Label: m.Label}
		for _, p := range append(append([]string(nil), out[i].Include...), out[i].Exclude...) {
			if _, err := path.Match(p, "a/b/c"); err != nil {
				return nil, fmt.Errorf("invalid provider pattern %q: %w", p, err)
			}
		}
	}
	return out, nil
}

// isNilTemplate catches a nil *repotemplate.Template in the interface.
func isNilTemplate(t RepositoryTemplate) bool {
	ot, ok := t.(*repotemplate.Template)
	return ok && ot == nil
}

func lower(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToLower(s)
	}
	return out
}

// covers applies a mapping's include and exclude patterns.
func (m ProviderMapping) covers(p names.Provider) bool {
	addr := p.String()
	match := func(patterns []string) bool {
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, addr); ok {
				return true
			}
		}
		return false
	}
	if len(m.Include) > 0 && !match(m.Include) {
		return false
	}
	return !match(m.Exclude)
}

// ErrNoRepository is a provider that a mapping covers but whose
// template gives no valid repository name for it (e.g. an oci_mirror
// template putting a host name with a port inside the repository path,
// which tofu refuses too).
var ErrNoRepository = errors.New("the mapping's template gives no valid repository name")

// Index is the position of the mapping p maps through, the first whose
// filters cover it (whether or not its template gives a repository for
// p); -1 when none does.
func (ms ProviderMappings) Index(p names.Provider) int {
	for i, m := range ms {
		if m.covers(p) {
			return i
		}
	}
	return -1
}

// Map returns the repository of the first mapping that covers p, or an
// error (NotFound) saying why there is none.
func (ms ProviderMappings) Map(p names.Provider) (oci.Reference, error) {
	if i := ms.Index(p); i >= 0 {
		ref, err := ms[i].Template.Expand(p.TemplateValues())
		if err != nil {
			return oci.Reference{}, &Error{Failure: oci.FailureNotFound, Repo: p.String(), What: "mapping the provider to a repository",
				Err: fmt.Errorf("%w: %v", ErrNoRepository, err)}
		}
		return ref, nil
	}
	return oci.Reference{}, &Error{Failure: oci.FailureNotFound, Repo: p.String(), What: "mapping the provider to a repository",
		Err: fmt.Errorf("provider %s is not served by this proxy (see its include and exclude filters)", p)}
}
