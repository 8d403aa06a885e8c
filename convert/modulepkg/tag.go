package modulepkg

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ParseTarget splits REPOSITORY:TAG, accepting '+' in a version tag
// (which a reference parser would refuse) and mapping it to '_'.
func ParseTarget(s string) (oci.Reference, string, error) {
	if strings.Contains(s, "@") {
		return oci.Reference{}, "", fmt.Errorf("%s: push to a tag (REPOSITORY:TAG), not a digest", s)
	}
	repo, tag := s, ""
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") && i > len(oci.LayoutPrefix)-1 {
		repo, tag = s[:i], s[i+1:]
	}
	if tag == "" {
		return oci.Reference{}, "", fmt.Errorf("%s: give a tag, e.g. %s:1.0.0 (OpenTofu reads ?tag=… and defaults to latest)", s, s)
	}
	ref, err := oci.ParseReference(repo)
	if err != nil {
		return oci.Reference{}, "", err
	}
	if ref.Reference != "" {
		return oci.Reference{}, "", fmt.Errorf("invalid reference %q", s)
	}
	tag, err = Tag(tag)
	if err != nil {
		return oci.Reference{}, "", err
	}
	return ref, tag, nil
}

// versionish tags must be canonical versions: a leading digit, or v
// followed by a digit.
var versionish = regexp.MustCompile(`^[vV]?[0-9]`)

// Tag validates a tag of a module package. Anything that looks like a version must be a
// canonical one, because the registry protocol lists versions from tags and
// OpenTofu resolves the canonical spelling; '+' becomes '_'.
func Tag(t string) (string, error) {
	if versionish.MatchString(t) {
		if v, ok := names.VersionFromTag(t); ok {
			return names.TagForVersion(v), nil
		}
		if t[0] == 'v' || t[0] == 'V' {
			return "", fmt.Errorf("tag %q looks like a version but is not a canonical one: write it without the %q (%s)", t, t[:1], t[1:])
		}
		v, err := names.ParseVersion(t)
		if err != nil {
			return "", fmt.Errorf("tag %q looks like a version but is not a canonical one (write e.g. 1.4.0 or 2.0.0-rc1): %w", t, err)
		}
		t = names.TagForVersion(v)
	}
	if !names.ValidTag(t) {
		return "", fmt.Errorf("invalid tag %q: tags are up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", t)
	}
	return t, nil
}
