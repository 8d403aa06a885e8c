package lockfile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// tagListing is a repository's tags and the versions a client sees in
// them.
type tagListing struct {
	tags      map[string]bool
	available names.VersionList
	// listedAs maps a version to the tags that were read as it.
	listedAs map[string][]string
}

// listVersions reads a repository's tags as the client's route to OCI
// reads them. OpenTofu's oci_mirror parses every tag leniently ("1.2" is
// version 1.2.0, "v1.2.3" and "latest" are nothing) and later resolves the
// canonical tag of the version it chose; Terraform reaches OCI only
// through the proxy, which lists canonical tags only.
func listVersions(ctx context.Context, repo oci.ReadOnlyRepository, c tfconfig.Client) (*tagListing, error) {
	tags, err := oci.ListTagsBefore(ctx, repo, oci.TagSchemaTags, nil) // versions begin with a digit
	if err != nil {
		return nil, err
	}
	tl := &tagListing{tags: map[string]bool{}, listedAs: map[string][]string{}}
	for _, t := range tags {
		tl.tags[t] = true
		v, ok := names.ListedVersion(t)
		if c == tfconfig.Terraform {
			v, ok = names.VersionFromTag(t)
		}
		if ok {
			tl.available = append(tl.available, v)
			tl.listedAs[v.String()] = append(tl.listedAs[v.String()], t)
		}
	}
	if len(tl.available) > oci.MaxVersions {
		return nil, fmt.Errorf("more than %d versions", oci.MaxVersions)
	}
	tl.available.Sort()
	return tl, nil
}

// tagFor returns the tag the client resolves for v, or an error saying why
// tofu would fail: the version was listed only from non-canonical tags
// (1.2 for 1.2.0), and its canonical tag does not exist.
func (tl *tagListing) tagFor(v names.Version, where string) (string, error) {
	tag := names.TagForVersion(v)
	if tl.tags[tag] {
		return tag, nil
	}
	from := append([]string(nil), tl.listedAs[v.String()]...)
	sort.Strings(from)
	return "", fmt.Errorf("%s: tofu's oci_mirror reads tag %s as version %s and selects it, then fails to resolve tag %q, which does not exist: push the release under its canonical tag %q (or remove the tag %s)",
		where, quoteAll(from), v, tag, tag, quoteAll(from))
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
