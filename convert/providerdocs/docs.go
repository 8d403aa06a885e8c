package providerdocs

import (
	"slices"
	"strings"
)

// Format is the version of the stored document's form.
const Format = 1

// Docs are a release's documentation pages. Their JSON field names are
// stable (the stored document).
type Docs struct {
	Format int    `json:"format"`
	Pages  []Page `json:"pages"`
	// Skipped are the files and directories of the tree that are no
	// page (other extensions, other directories), from its root; not
	// stored.
	Skipped []string `json:"-"`
}

// Page is one documentation page.
type Page struct {
	// Category is one of Categories; Slug the file's name without its
	// extension ("index" for the provider's overview, category "index").
	Category string `json:"category"`
	Slug     string `json:"slug"`
	// Path is the file in the tree, from its root ("resources/thing.md",
	// "r/thing.html.markdown"): relative links resolve from its directory.
	Path string `json:"path"`
	// Title is the front matter's page_title, else the first heading,
	// else the slug; Subcategory and Description the front matter's.
	Title       string `json:"title"`
	Subcategory string `json:"subcategory"`
	Description string `json:"description"`
	// Markdown is the page without its front matter.
	Markdown string `json:"markdown"`
}

// Category is a kind of page: its name (in URLs and the stored
// document), its title, and the directories of a tree it is read from.
type Category struct {
	Name, Title string
	Dirs        []string
}

// Categories are the page categories in the order pages are listed,
// each with the directory names it is read from (the registry's, then
// the legacy website/docs ones).
var Categories = []Category{
	{"index", "Overview", nil},
	{"guides", "Guides", []string{"guides"}},
	{"resources", "Resources", []string{"resources", "r"}},
	{"data-sources", "Data sources", []string{"data-sources", "d"}},
	{"ephemeral-resources", "Ephemeral resources", []string{"ephemeral-resources"}},
	{"list-resources", "List resources", []string{"list-resources"}},
	{"functions", "Functions", []string{"functions"}},
}

// CategoryOf is the category a directory of the tree holds, or "".
func CategoryOf(dir string) string {
	for _, c := range Categories {
		if slices.Contains(c.Dirs, dir) {
			return c.Name
		}
	}
	return ""
}

// KnownCategory reports whether name is one of Categories.
func KnownCategory(name string) bool {
	return categoryRank(name) < len(Categories)
}

// categoryRank orders categories as Categories lists them.
func categoryRank(name string) int {
	for i, c := range Categories {
		if c.Name == name {
			return i
		}
	}
	return len(Categories)
}

// sortPages orders pages by category, then slug.
func sortPages(pages []Page) {
	slices.SortFunc(pages, func(a, b Page) int {
		if d := categoryRank(a.Category) - categoryRank(b.Category); d != 0 {
			return d
		}
		return strings.Compare(a.Slug, b.Slug)
	})
}

// Find is the page of category and slug, or nil.
func (d *Docs) Find(category, slug string) *Page {
	for i := range d.Pages {
		if d.Pages[i].Category == category && d.Pages[i].Slug == slug {
			return &d.Pages[i]
		}
	}
	return nil
}

// Resolve is the page a link's path inside the tree names (cleaned,
// from the tree's root, as readme.Options.Link is given it), with or
// without its extension: "resources/thing", "r/thing.html",
// "index.html.markdown"; nil when none.
func (d *Docs) Resolve(treePath string) *Page {
	dir, file, ok := strings.Cut(treePath, "/")
	if !ok {
		if slug := slugOf(dir); slug == "index" {
			return d.Find("index", "index")
		}
		return nil
	}
	category := CategoryOf(dir)
	if category == "" || strings.Contains(file, "/") {
		return nil
	}
	return d.Find(category, slugOf(file))
}

// slugOf is a file name without a page extension (.md, .markdown,
// .html.markdown, .html.md, .html).
func slugOf(name string) string {
	for _, ext := range []string{".markdown", ".md"} {
		name = strings.TrimSuffix(name, ext)
	}
	return strings.TrimSuffix(name, ".html")
}
