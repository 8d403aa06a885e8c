package catalog

import (
	"errors"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// A documentation page's path: docs/CATEGORY/SLUG under a version; a
// category that is none is a 404, a bad segment a bad path.
func TestParseProviderDocPath(t *testing.T) {
	req, err := ParsePath("providers/example.com/acme/widgets/1.2.0/docs/data-sources/thing_v2")
	if err != nil || req.Provider == nil || req.Version == nil || req.Version.String() != "1.2.0" || req.Doc == nil || *req.Doc != (DocPath{Category: "data-sources", Slug: "thing_v2"}) {
		t.Fatalf("%+v %v", req, err)
	}
	if req, err := ParsePath("providers/example.com/acme/widgets/1.2.0"); err != nil || req.Doc != nil {
		t.Errorf("a version's page: %+v %v", req, err)
	}
	for path, notFound := range map[string]bool{
		"providers/example.com/acme/widgets/1.2.0/docs/nope/thing":           true,
		"providers/example.com/acme/widgets/1.2.0/docs/Resources/thing":      true,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/..":         false,
		"providers/example.com/acme/widgets/1.2.0/docs/../thing":             false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/a%2Fb":      false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/a%5Cb":      false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources%2F..%2Fx/y": false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/.hidden":    false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/a..b":       false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/a%20b":      false,
		"providers/example.com/acme/widgets/1.2.0/doc/resources/thing":       false,
		"providers/example.com/acme/widgets/1.2.0/docs":                      false,
		"providers/example.com/acme/widgets/1.2.0/docs/resources/x/y":        false,
		"providers/example.com/acme/widgets/latest/docs/resources/thing":     false,
	} {
		_, err := ParsePath(path)
		var nf *source.NotFound
		if err == nil || errors.As(err, &nf) != notFound {
			t.Errorf("%s: %v, want a 404: %v", path, err, notFound)
		}
	}
}

// A category's list of pages: docs/CATEGORY under a version.
func TestParseProviderDocCategoryPath(t *testing.T) {
	req, err := ParsePath("providers/example.com/acme/widgets/1.2.0/docs/resources")
	if err != nil || req.Doc == nil || *req.Doc != (DocPath{Category: "resources"}) {
		t.Fatalf("%+v %v", req, err)
	}
	var nf *source.NotFound
	if _, err := ParsePath("providers/example.com/acme/widgets/1.2.0/docs/nope"); !errors.As(err, &nf) {
		t.Errorf("an unknown category: %v, want a 404", err)
	}
}
