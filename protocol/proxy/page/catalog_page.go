package page

import (
	"bytes"
	"html/template"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

var catalogFuncs = template.FuncMap{
	"slash": breakAfterSlashes,
	"inc":   func(n int) int { return n + 1 },
	"dec":   func(n int) int { return n - 1 },
	"statusClass": func(s string) string {
		switch s {
		case catalog.StatusServed:
			return "ok"
		case catalog.StatusDeprecated, catalog.StatusWarned:
			return "warn"
		}
		return "bad"
	},
}

var (
	catalogTemplate  = template.Must(template.New("catalog.html.tmpl").Funcs(catalogFuncs).ParseFS(pageFS, "catalog.html.tmpl", "style.html.tmpl"))
	moduleTemplate   = template.Must(template.New("module.html.tmpl").Funcs(catalogFuncs).ParseFS(pageFS, "module.html.tmpl", "style.html.tmpl"))
	providerTemplate = template.Must(template.New("provider.html.tmpl").Funcs(catalogFuncs).ParseFS(pageFS, "provider.html.tmpl", "style.html.tmpl"))
	tofuTemplate     = template.Must(template.New("tofu.html.tmpl").Funcs(catalogFuncs).ParseFS(pageFS, "tofu.html.tmpl", "style.html.tmpl"))
)

// RenderCatalogIndex is the HTML of the catalogue's index, in the
// page's style.
func RenderCatalogIndex(d catalog.IndexPage) ([]byte, error) {
	return render(catalogTemplate, d)
}

// RenderModule is the HTML of a module's catalogue page.
func RenderModule(d catalog.ModulePage) ([]byte, error) {
	return render(moduleTemplate, d)
}

// RenderProvider is the HTML of a provider's catalogue page.
func RenderProvider(d catalog.ProviderPage) ([]byte, error) {
	return render(providerTemplate, d)
}

// RenderTofu is the HTML of the OpenTofu releases' catalogue page.
func RenderTofu(d catalog.TofuPage) ([]byte, error) {
	return render(tofuTemplate, d)
}

func render(t *template.Template, d any) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
