package page

import (
	"embed"
	"html/template"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// providerDocFS holds the template of a provider's documentation page.
//
//go:embed provider_doc.html.tmpl provider_doc_category.html.tmpl style.html.tmpl
var providerDocFS embed.FS

var (
	providerDocTemplate         = template.Must(template.New("provider_doc.html.tmpl").Funcs(catalogFuncs).ParseFS(providerDocFS, "provider_doc.html.tmpl", "style.html.tmpl"))
	providerDocCategoryTemplate = template.Must(template.New("provider_doc_category.html.tmpl").Funcs(catalogFuncs).ParseFS(providerDocFS, "provider_doc_category.html.tmpl", "style.html.tmpl"))
)

// RenderProviderDoc is the HTML of a page of a provider's documentation
// (its Markdown rendered safely by the catalogue: catalog.ProviderDocPage.HTML).
func RenderProviderDoc(d catalog.ProviderDocPage) ([]byte, error) {
	return render(providerDocTemplate, d)
}

// RenderProviderDocCategory is the HTML of the list of a category of a
// provider's documentation, one page of it.
func RenderProviderDocCategory(d catalog.ProviderDocCategoryPage) ([]byte, error) {
	return render(providerDocCategoryTemplate, d)
}
