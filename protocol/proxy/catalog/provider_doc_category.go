package catalog

import (
	"context"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// ProviderDocCategoryPage is one category of a provider version's
// documentation: its pages by slug, page Page of them (PageSize each,
// ?page= as the index pages).
type ProviderDocCategoryPage struct {
	Address  string `json:"address"`
	Version  string `json:"version"`
	Category string `json:"category"`
	Title    string `json:"title"`
	// Entries are this page's; Total how many the category has, Pages
	// how many pages list them.
	Entries  []DocLink `json:"entries"`
	Total    int       `json:"total"`
	Page     int       `json:"page"`
	Pages    int       `json:"pages"`
	Referrer string    `json:"referrer"`
	// Provider is the version's page and Categories every category with
	// its count (Pages left empty), URLs relative to this page.
	Provider   string        `json:"provider"`
	Categories []DocCategory `json:"categories"`
	// Base leads back to the catalogue's index.
	Base string `json:"-"`
}

// serveDocCategory answers the list of a documentation category's pages.
func (h *Handlers) serveDocCategory(w http.ResponseWriter, r *http.Request, req Request) {
	_, page, err := indexQuery(r)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	d, err := h.docCategoryPage(r.Context(), req, page)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	write(h, w, r, d, h.RenderProviderDocCategory)
}

// docCategoryPage builds page n of the category req.Doc names, of a
// version the policy serves; a category without pages is a 404.
func (h *Handlers) docCategoryPage(ctx context.Context, req Request, n int) (ProviderDocCategoryPage, error) {
	page, s, err := h.versionDocs(ctx, req)
	if err != nil {
		return ProviderDocCategoryPage{}, err
	}
	all := s.pagesOf(req.Doc.Category)
	if len(all) == 0 {
		return ProviderDocCategoryPage{}, source.NotFoundf("provider %s %s has no %s pages", page.Address, page.Version, req.Doc.Category)
	}
	base := strings.Repeat("../", 6) // providers/HOST/NAMESPACE/TYPE/VERSION/docs/CATEGORY
	d := ProviderDocCategoryPage{Address: page.Address, Version: page.Version, Category: req.Doc.Category,
		Entries: docLinks(pageOf(all, n), base, page.Address, page.Version), Total: len(all), Page: n,
		Pages: (len(all) + PageSize - 1) / PageSize, Referrer: s.referrer, Base: base,
		Provider: base + strings.TrimPrefix(ProviderPath(*req.Provider, req.Version), "catalog/")}
	for _, c := range providerdocs.Categories {
		if c.Name == d.Category {
			d.Title = c.Title
		}
	}
	d.Categories = s.listing(base, page.Address, page.Version).Categories
	for i := range d.Categories {
		d.Categories[i].Pages = []DocLink{}
	}
	return d, nil
}
