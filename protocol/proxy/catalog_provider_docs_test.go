package proxy

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// hostileDocs is a documentation tree with script, event handlers and
// javascript: links among its links to its own pages.
var hostileDocs = map[string]string{
	"index.md": "# Hello provider\n\nSee [the thing](resources/thing.md), <script>alert(1)</script> " +
		"[bad](javascript:alert(1)) [also bad](JaVaScRiPt&colon;alert(2)) ![logo](logo.png) [out](../../etc/passwd)\n",
	"resources/thing.md": "---\npage_title: \"hello_thing Resource\"\nsubcategory: \"Things\"\ndescription: |-\n  Manages a thing.\n---\n" +
		"# hello_thing\n\n[Back](../index.md), [the data source](../data-sources/thing), [missing](missing.md)\n\n" +
		"<img src=x onerror=alert(1)>\n\n<a href=\"javascript:alert(3)\">raw</a>\n",
	"data-sources/thing.md": "# data thing\n",
}

// attachDocs stores files as the documentation of dir/ns/typ's version.
func attachDocs(t *testing.T, dir, ns, typ, version string, files map[string]string) {
	t.Helper()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/" + ns + "/" + typ})
	if err != nil {
		t.Fatal(err)
	}
	attachDocsTo(t, repo, version, files)
}

// attachDocsTo stores files as the documentation of repo's version.
func attachDocsTo(t *testing.T, repo oci.Repository, version string, files map[string]string) {
	t.Helper()
	tree := t.TempDir()
	for p, content := range files {
		full := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, err := providerdocs.ReadDir(tree)
	if err != nil {
		t.Fatal(err)
	}
	root, err := repo.Resolve(context.Background(), version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := providerdocs.Attach(context.Background(), repo, root, docs, false); err != nil {
		t.Fatal(err)
	}
}

// resolveFrom is ref as a browser resolves it from the page at from.
func resolveFrom(t *testing.T, from, ref string) string {
	t.Helper()
	base, err := url.Parse("http://proxy" + from)
	if err != nil {
		t.Fatal(err)
	}
	u, err := base.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// A provider page lists the documentation its release carries, by
// category with titles and subcategories, each page at its own URL,
// rendered safely (no script, no event handler, no javascript: link;
// links to the release's own pages resolved, others text); a release
// without documentation says so plainly, and its documentation paths
// are 404s, as are unknown categories and pages.
func TestCatalogProviderDocs(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	attachDocs(t, dir, "team-b", "hello", "1.0.0", hostileDocs)

	const page = "/catalog/providers/example.com/team-b/hello/1.0.0"
	d, r := getCatalog[catalog.ProviderPage](t, p, page, nil)
	if r.Status != http.StatusOK || !d.Docs.Stored || d.Docs.Referrer == "" {
		t.Fatalf("%d %+v\n%s", r.Status, d.Docs, r.Body)
	}
	var listed []string
	for _, c := range d.Docs.Categories {
		for _, pg := range c.Pages {
			listed = append(listed, c.Title+": "+pg.Title+" ["+pg.Subcategory+"] "+resolveFrom(t, page, pg.URL))
		}
	}
	want := []string{
		"Overview: Hello provider [] " + page + "/docs/index/index",
		"Resources: hello_thing Resource [Things] " + page + "/docs/resources/thing",
		"Data sources: data thing [] " + page + "/docs/data-sources/thing",
	}
	if strings.Join(listed, "\n") != strings.Join(want, "\n") {
		t.Errorf("listed:\n%s\nwant:\n%s", strings.Join(listed, "\n"), strings.Join(want, "\n"))
	}
	if html := p.get(t, page); !strings.Contains(string(html.Body), `>hello_thing Resource</a> <span class="muted">Things</span>`) {
		t.Errorf("the page's HTML lists no documentation:\n%s", html.Body)
	}

	for _, path := range []string{page + "/docs/index/index", page + "/docs/resources/thing"} {
		html := p.get(t, path)
		body := string(html.Body)
		if html.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, html.Status, body)
		}
		for _, bad := range []string{"<script", "alert(1)</script>", "javascript:", "JaVaScRiPt", "onerror", "<img src=\"x\""} {
			if strings.Contains(strings.ToLower(body), strings.ToLower(bad)) {
				t.Errorf("%s holds %q:\n%s", path, bad, body)
			}
		}
	}
	thing := p.get(t, page+"/docs/resources/thing")
	for _, ref := range []string{"index/index", "data-sources/thing"} {
		if !strings.Contains(string(thing.Body), `href="../../../../../../../providers/example.com/team-b/hello/1.0.0/docs/`+ref+`"`) {
			t.Errorf("the thing page does not link %s:\n%s", ref, thing.Body)
		}
	}
	if strings.Contains(string(thing.Body), "missing") && strings.Contains(string(thing.Body), `href="missing`) {
		t.Errorf("a link to no page is a link:\n%s", thing.Body)
	}
	doc, r := getCatalog[catalog.ProviderDocPage](t, p, page+"/docs/resources/thing", nil)
	if r.Status != http.StatusOK || doc.Title != "hello_thing Resource" || doc.Subcategory != "Things" || doc.Description != "Manages a thing." ||
		!strings.HasPrefix(doc.Markdown, "# hello_thing") || doc.Path != "resources/thing.md" || resolveFrom(t, page+"/docs/resources/thing", doc.Provider) != page {
		t.Errorf("JSON: %d %+v", r.Status, doc)
	}

	none, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-a/hello", nil)
	if r.Status != http.StatusOK || none.Docs.Stored || none.Docs.Note != catalog.NoDocs || none.Docs.Categories == nil {
		t.Errorf("no documentation: %d %+v", r.Status, none.Docs)
	}
	if html := p.get(t, "/catalog/providers/example.com/team-a/hello"); !strings.Contains(string(html.Body), "this release carries no documentation.") {
		t.Errorf("the page does not say it carries no documentation:\n%s", html.Body)
	}
	for path, status := range map[string]int{
		"/catalog/providers/example.com/team-a/hello/1.0.0/docs/index/index":     http.StatusNotFound,
		page + "/docs/resources/missing":                                         http.StatusNotFound,
		page + "/docs/nope/thing":                                                http.StatusNotFound,
		page + "/docs/resources/..":                                              http.StatusBadRequest,
		page + "/docs/resources/a%2Fb":                                           http.StatusBadRequest,
		page + "/docs/..%2F..%2Fresources/thing":                                 http.StatusBadRequest,
		page + "/notdocs/resources/thing":                                        http.StatusBadRequest,
		page + "/docs/resources/thing%00":                                        http.StatusBadRequest,
		"/catalog/providers/example.com/team-a/hello/2.0.0-rc1/docs/index/index": http.StatusNotFound,
	} {
		if r := p.get(t, path); r.Status != status {
			t.Errorf("%s: %d, want %d: %s", path, r.Status, status, r.Body)
		}
	}
}
