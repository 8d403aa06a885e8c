package release

import (
	"archive/zip"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ErrNamesDisagree reports a provider release whose names do not agree:
// the type its files are named after, the executable inside its archives,
// and the type of the address or repository it is served under. OpenTofu
// installs the package and then fails: "could not find executable file
// starting with terraform-provider-<type>".
var ErrNamesDisagree = fmt.Errorf("provider names disagree")

// CheckServedAs refuses to serve the release as a provider of another
// type than its files are named after.
func (rel *Provider) CheckServedAs(typ string) error {
	if strings.EqualFold(rel.Type, typ) {
		return nil
	}
	return fmt.Errorf("%w: the release is of type %s (%s…) but would be served as type %s: tofu would look for an executable named %s%s and find %s%s",
		ErrNamesDisagree, rel.Type, names.ProviderFilePrefix+rel.Type, typ, names.ProviderFilePrefix, typ, names.ProviderFilePrefix, rel.Type)
}

// CheckRepository refuses a repository whose last path component names
// another provider type than the release's (a template maps type T to a
// repository ending in T).
func (rel *Provider) CheckRepository(repository string) error {
	if names.RepositoryServesType(repository, rel.Type) {
		return nil
	}
	last := repository[strings.LastIndex(repository, "/")+1:]
	return fmt.Errorf("%w: repository %s serves provider type %s, but the release is of type %s (%s…): tofu would look for an executable named %s%s; push it to a repository named after %s",
		ErrNamesDisagree, repository, last, rel.Type, names.ProviderFilePrefix+rel.Type, names.ProviderFilePrefix, last, rel.Type)
}

// checkExecutable refuses a package without the executable OpenTofu runs
// for the release's type at the top of the archive.
func (p Package) checkExecutable(typ string) error {
	z, err := zip.OpenReader(p.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Filename, err)
	}
	defer z.Close()
	var top []string
	for _, f := range z.File {
		if strings.Contains(strings.TrimSuffix(f.Name, "/"), "/") || f.FileInfo().IsDir() {
			continue
		}
		if names.IsProviderExecutable(typ, f.Name) {
			return nil
		}
		top = append(top, f.Name)
	}
	return fmt.Errorf("%w: %s holds no executable for type %s (tofu looks for %s, or %s_… or %s.…, at the top of the archive); it holds %s",
		ErrNamesDisagree, p.Filename, typ, names.ProviderFilePrefix+typ, names.ProviderFilePrefix+typ, names.ProviderFilePrefix+typ, listOrNothing(top))
}

func listOrNothing(files []string) string {
	if len(files) == 0 {
		return "no file"
	}
	return strings.Join(files, ", ")
}
