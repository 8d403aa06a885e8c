package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// awsSizedDocs is a documentation tree of resources resource pages and
// dataSources data source pages, named TYPE_rNNNN and TYPE_dNNNN.
func awsSizedDocs(typ string, resources, dataSources int) map[string]string {
	files := map[string]string{"index.md": "# The " + typ + " provider\n"}
	for i := 0; i < resources; i++ {
		files[fmt.Sprintf("resources/r%04d.md", i)] = fmt.Sprintf("# %s_r%04d\n", typ, i)
	}
	for i := 0; i < dataSources; i++ {
		files[fmt.Sprintf("data-sources/d%04d.md", i)] = fmt.Sprintf("# data %s_d%04d\n", typ, i)
	}
	return files
}

// A release with an aws-sized documentation lists each category's count
// and its first pages on the version's page, bounded; each category has
// a page listing all its pages by slug, PageSize at a time (?page=, as
// the index pages), in HTML and JSON; the pages themselves keep their
// URLs.
func TestCatalogProviderDocsArePaged(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	const resources, dataSources = 1234, 466
	attachDocs(t, dir, "team-b", "hello", "1.0.0", awsSizedDocs("hello", resources, dataSources))

	const page = "/catalog/providers/example.com/team-b/hello/1.0.0"
	d, r := getCatalog[catalog.ProviderPage](t, p, page, nil)
	if r.Status != http.StatusOK || !d.Docs.Stored {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var got []string
	for _, c := range d.Docs.Categories {
		got = append(got, fmt.Sprintf("%s %d %d %s", c.Category, c.Count, len(c.Pages), resolveFrom(t, page, c.URL)))
	}
	want := []string{"index 1 1 " + page + "/docs/index", fmt.Sprintf("resources %d %d %s/docs/resources", resources, catalog.DocsShown, page),
		fmt.Sprintf("data-sources %d %d %s/docs/data-sources", dataSources, catalog.DocsShown, page)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("categories:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	html := p.get(t, page)
	if n := strings.Count(string(html.Body), "/docs/"); html.Status != http.StatusOK || n > 3*(catalog.DocsShown+2) {
		t.Errorf("the version page links %d documentation pages: %d", n, html.Status)
	}
	if !strings.Contains(string(html.Body), fmt.Sprintf(">all %d Resources</a>", resources)) {
		t.Errorf("the version page does not lead to all the resources:\n%s", html.Body)
	}

	const cat = page + "/docs/resources"
	var slugs []string
	for n := 1; ; n++ {
		c, r := getCatalog[catalog.ProviderDocCategoryPage](t, p, fmt.Sprintf("%s?page=%d", cat, n), nil)
		if r.Status != http.StatusOK || c.Total != resources || c.Page != n || c.Pages != (resources+catalog.PageSize-1)/catalog.PageSize || c.Title != "Resources" {
			t.Fatalf("page %d: %d %+v", n, r.Status, c)
		}
		if len(c.Entries) == 0 {
			break
		}
		if len(c.Entries) > catalog.PageSize {
			t.Fatalf("page %d lists %d", n, len(c.Entries))
		}
		for _, e := range c.Entries {
			if want := cat + "/" + e.Slug; resolveFrom(t, cat, e.URL) != want {
				t.Errorf("%s links %s, want %s", e.Slug, resolveFrom(t, cat, e.URL), want)
			}
			slugs = append(slugs, e.Slug)
		}
		if resolveFrom(t, cat, c.Provider) != page || len(c.Categories) != 3 {
			t.Errorf("page %d: provider %s, categories %+v", n, c.Provider, c.Categories)
		}
	}
	if len(slugs) != resources || slugs[0] != "r0000" || slugs[resources-1] != fmt.Sprintf("r%04d", resources-1) {
		t.Errorf("the pages list %d slugs, %v…", len(slugs), slugs[:min(len(slugs), 3)])
	}
	for i := 1; i < len(slugs); i++ {
		if slugs[i-1] >= slugs[i] {
			t.Fatalf("slugs out of order at %d: %s %s", i, slugs[i-1], slugs[i])
		}
	}
	html = p.get(t, cat+"?page=2")
	for _, s := range []string{">hello_r0050</a>", `href="?page=1">previous</a>`, `href="?page=3">next</a>`, "Page 2 of 25"} {
		if !strings.Contains(string(html.Body), s) {
			t.Errorf("the category's HTML page 2 lacks %q:\n%s", s, html.Body)
		}
	}
	if doc, r := getCatalog[catalog.ProviderDocPage](t, p, cat+"/r1233", nil); r.Status != http.StatusOK || doc.Title != "hello_r1233" || len(doc.Docs.Categories[1].Pages) != catalog.DocsShown {
		t.Errorf("a page: %d %+v", r.Status, doc.Docs.Categories)
	}
	for path, status := range map[string]int{
		cat + "?page=0":          http.StatusBadRequest,
		cat + "?page=x":          http.StatusBadRequest,
		page + "/docs/functions": http.StatusNotFound,
		page + "/docs/nope":      http.StatusNotFound,
		"/catalog/providers/example.com/team-a/hello/1.0.0/docs/resources": http.StatusNotFound,
	} {
		if r := p.get(t, path); r.Status != status {
			t.Errorf("%s: %d, want %d: %s", path, r.Status, status, r.Body)
		}
	}
}
