package catalog

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"path"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog/readme"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// A provider release's documentation in the catalogue: listed on the
// version's page when the release carries it (providerdocs, a referrer
// of its index) by category, each with its count and first pages, all
// of a category's at …/VERSION/docs/CATEGORY (provider_doc_category.go,
// paged as the index), each page at …/VERSION/docs/CATEGORY/SLUG rendered
// safely (readme.Render: no raw HTML, no script, relative links resolved
// inside the documentation); said plainly when it carries none.

// NoDocs is what a provider page says of a release without documentation.
const NoDocs = "this release carries no documentation"

// ProviderDocs is the documentation a provider page lists.
type ProviderDocs struct {
	// Stored is set when the release carries documentation; Note says
	// plainly what is shown otherwise (NoDocs, or why it cannot be read).
	Stored   bool   `json:"stored"`
	Note     string `json:"note,omitempty"`
	Referrer string `json:"referrer,omitempty"`
	// Categories are those with pages, in providerdocs.Categories' order.
	Categories []DocCategory `json:"categories"`
}

// DocsShown bounds the pages a category lists on a version's page and
// beside a documentation page (an aws-sized release has some 1,700):
// the category's own page lists them all, PageSize at a time.
const DocsShown = 20

// DocCategory is one category: how many pages it has (Count), its page
// listing them all (URL, relative to the page listing it) and the first
// DocsShown of them, by slug.
type DocCategory struct {
	Category string    `json:"category"`
	Title    string    `json:"title"`
	Count    int       `json:"count"`
	URL      string    `json:"url"`
	Pages    []DocLink `json:"pages"`
}

// DocLink is one page as listed; URL is its page, relative to the page
// listing it.
type DocLink struct {
	Slug        string `json:"slug"`
	Title       string `json:"title"`
	Subcategory string `json:"subcategory"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

// ProviderDocPage is one page of a provider version's documentation.
type ProviderDocPage struct {
	Address       string `json:"address"`
	Version       string `json:"version"`
	Category      string `json:"category"`
	CategoryTitle string `json:"category_title"`
	Slug          string `json:"slug"`
	Title         string `json:"title"`
	Subcategory   string `json:"subcategory"`
	Description   string `json:"description"`
	// Path is the page's file in the documentation tree; Markdown its
	// text without the front matter, HTML that rendered.
	Path     string        `json:"path"`
	Markdown string        `json:"markdown"`
	HTML     template.HTML `json:"-"`
	Referrer string        `json:"referrer"`
	// Provider is the version's page, Docs its documentation, URLs
	// relative to this page.
	Provider string       `json:"provider"`
	Docs     ProviderDocs `json:"docs"`
	// Base leads back to the catalogue's index.
	Base string `json:"-"`
}

// storedDocs is a release's documentation as read (nil docs: none), and
// why it cannot be read when that is the content's fault (problem) or
// the registry's (err).
type storedDocs struct {
	docs     *providerdocs.Docs
	referrer string
	problem  string
	err      error
}

// docsOf is the documentation of the release at root, read, and as its
// page at base lists it: a registry failing to give it is said on the
// page (as a lock block it cannot give), not the page's failure.
func docsOf(ctx context.Context, root *source.Root, base, address, version string) (storedDocs, ProviderDocs) {
	s, err := readDocs(ctx, root)
	if err != nil {
		s = storedDocs{err: err}
		return s, ProviderDocs{Note: "the documentation could not be read: " + err.Error(), Categories: []DocCategory{}}
	}
	return s, s.listing(base, address, version)
}

// readDocs reads the documentation stored for the release at root,
// cached by the index's digest (store.Repo.Described: documentation
// stored later is seen within its TTL).
func readDocs(ctx context.Context, root *source.Root) (storedDocs, error) {
	v, err := root.Repo.Described(ctx, "the provider's documentation", root.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		docs, desc, err := providerdocs.Read(ctx, repo, root.Digest)
		switch {
		case errors.Is(err, providerdocs.ErrNoDocs):
			return storedDocs{}, 0, nil
		case errors.Is(err, providerdocs.ErrBadDocs):
			return storedDocs{problem: err.Error()}, int64(len(err.Error())), nil
		case err != nil:
			return nil, 0, err
		}
		size := int64(0)
		for _, p := range docs.Pages {
			size += int64(len(p.Markdown) + len(p.Title) + len(p.Description) + 256)
		}
		return storedDocs{docs: docs, referrer: desc.Digest.String()}, size, nil
	})
	if err != nil {
		return storedDocs{}, err
	}
	s, _ := v.(storedDocs)
	return s, nil
}

// listing is the documentation as a page at base (relative to the
// catalogue's index) lists it: each category's count and first
// DocsShown pages.
func (s storedDocs) listing(base, address, version string) ProviderDocs {
	if s.docs == nil {
		note := NoDocs
		if s.problem != "" {
			note = NoDocs + " that can be read: " + s.problem
		}
		return ProviderDocs{Note: note, Categories: []DocCategory{}}
	}
	out := ProviderDocs{Stored: true, Referrer: s.referrer, Categories: []DocCategory{}}
	for _, c := range providerdocs.Categories {
		pages := s.pagesOf(c.Name)
		if len(pages) == 0 {
			continue
		}
		out.Categories = append(out.Categories, DocCategory{Category: c.Name, Title: c.Title, Count: len(pages),
			URL: base + docCategoryPath(address, version, c.Name), Pages: docLinks(pages[:min(len(pages), DocsShown)], base, address, version)})
	}
	return out
}

// pagesOf are the pages of category, by slug.
func (s storedDocs) pagesOf(category string) []providerdocs.Page {
	var out []providerdocs.Page
	for _, p := range s.docs.Pages { // sorted by category, then slug (providerdocs.Parse)
		if p.Category == category {
			out = append(out, p)
		}
	}
	return out
}

// docLinks are pages as a page at base lists them.
func docLinks(pages []providerdocs.Page, base, address, version string) []DocLink {
	out := make([]DocLink, len(pages))
	for i, p := range pages {
		out[i] = DocLink{Slug: p.Slug, Title: p.Title, Subcategory: p.Subcategory, Description: p.Description,
			URL: base + docPagePath(address, version, p.Category, p.Slug)}
	}
	return out
}

// serveProviderDoc answers a page of a provider version's documentation.
func (h *Handlers) serveProviderDoc(w http.ResponseWriter, r *http.Request, req Request) {
	if req.Doc.Slug == "" {
		h.serveDocCategory(w, r, req)
		return
	}
	d, err := h.providerDocPage(r.Context(), req)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	write(h, w, r, d, h.RenderProviderDoc)
}

// providerDocPage builds the page req.Doc names, of a version the
// policy serves (its provider page answers).
func (h *Handlers) providerDocPage(ctx context.Context, req Request) (ProviderDocPage, error) {
	page, s, err := h.versionDocs(ctx, req)
	if err != nil {
		return ProviderDocPage{}, err
	}
	p := s.docs.Find(req.Doc.Category, req.Doc.Slug)
	if p == nil {
		return ProviderDocPage{}, source.NotFoundf("provider %s %s has no %s page %s", page.Address, page.Version, req.Doc.Category, req.Doc.Slug)
	}
	base := strings.Repeat("../", 7) // providers/HOST/NAMESPACE/TYPE/VERSION/docs/CATEGORY/SLUG
	d := ProviderDocPage{Address: page.Address, Version: page.Version, Category: p.Category, Slug: p.Slug, Title: p.Title,
		Subcategory: p.Subcategory, Description: p.Description, Path: p.Path, Markdown: p.Markdown, Referrer: s.referrer,
		Provider: base + strings.TrimPrefix(ProviderPath(*req.Provider, req.Version), "catalog/"), Base: base,
		Docs: s.listing(base, page.Address, page.Version)}
	for _, c := range providerdocs.Categories {
		if c.Name == p.Category {
			d.CategoryTitle = c.Title
		}
	}
	d.HTML = renderDocPage(s.docs, p, base, page.Address, page.Version)
	return d, nil
}

// versionDocs are the page of the version req names (one the policy
// serves) and its documentation, which it must carry.
func (h *Handlers) versionDocs(ctx context.Context, req Request) (ProviderPage, storedDocs, error) {
	page, err := h.providerPage(ctx, Request{Provider: req.Provider, Version: req.Version}, nil)
	if err != nil {
		return ProviderPage{}, storedDocs{}, err
	}
	s := page.docs
	if s.err != nil {
		return ProviderPage{}, storedDocs{}, s.err
	}
	if s.docs == nil {
		return ProviderPage{}, storedDocs{}, source.NotFoundf("provider %s %s: %s", page.Address, page.Version, NoDocs)
	}
	return page, s, nil
}

// renderDocPage renders p safely, its relative links to the pages of
// docs they name (from p's directory in the tree, with or without an
// extension), others left as text; no image is served.
func renderDocPage(docs *providerdocs.Docs, p *providerdocs.Page, base, address, version string) template.HTML {
	link := func(treePath string) string {
		if target := docs.Resolve(treePath); target != nil {
			return base + docPagePath(address, version, target.Category, target.Slug)
		}
		return ""
	}
	return readme.Render([]byte(p.Markdown), readme.Options{Dir: path.Dir(p.Path), Link: link, Image: func(string) string { return "" }})
}
