package catalog

import (
	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// DocPath is a page of a provider version's documentation,
// …/VERSION/docs/CATEGORY/SLUG, or the list of a category's pages,
// …/VERSION/docs/CATEGORY (Slug "").
type DocPath struct {
	Category string
	Slug     string
}

// parseDocPath reads docs/CATEGORY[/SLUG] (segments unescaped and
// checked by respond.SplitPath): a category that is none of
// providerdocs.Categories is a page that does not exist, a slug that is
// no page name a bad path.
func parseDocPath(seg []string) (*DocPath, error) {
	if seg[0] != "docs" {
		return nil, respond.BadPath("want …/VERSION/docs/CATEGORY[/SLUG], got %s/", seg[0])
	}
	if !providerdocs.KnownCategory(seg[1]) {
		return nil, source.NotFoundf("no documentation category %q", seg[1])
	}
	if len(seg) == 2 {
		return &DocPath{Category: seg[1]}, nil
	}
	if !providerdocs.NameOK(seg[2]) {
		return nil, respond.BadPath("invalid documentation page name %q", seg[2])
	}
	return &DocPath{Category: seg[1], Slug: seg[2]}, nil
}

// docPagePath is a documentation page's path from the catalogue's
// index.
func docPagePath(address, version, category, slug string) string {
	return "providers/" + address + "/" + version + "/docs/" + category + "/" + slug
}

// docCategoryPath is the path of a category's list of pages from the
// catalogue's index.
func docCategoryPath(address, version, category string) string {
	return "providers/" + address + "/" + version + "/docs/" + category
}
