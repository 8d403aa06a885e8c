package page

import (
	"bytes"
	"html/template"
	"sync"

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
	catalogTemplate  = catalogPageTemplate("catalog.html.tmpl")
	moduleTemplate   = catalogPageTemplate("module.html.tmpl")
	providerTemplate = catalogPageTemplate("provider.html.tmpl")
	tofuTemplate     = catalogPageTemplate("tofu.html.tmpl")
)

// catalogPageTemplate is the catalogue page template name, parsed on
// first use.
func catalogPageTemplate(name string) func() *template.Template {
	return sync.OnceValue(func() *template.Template {
		return template.Must(template.New(name).Funcs(catalogFuncs).ParseFS(pageFS, name, "style.html.tmpl"))
	})
}

// RenderCatalogIndex is the HTML of the catalogue's index, in the
// page's style.
func RenderCatalogIndex(d catalog.IndexPage) ([]byte, error) {
	return render(catalogTemplate(), d)
}

// RenderModule is the HTML of a module's catalogue page.
func RenderModule(d catalog.ModulePage) ([]byte, error) {
	return render(moduleTemplate(), d)
}

// RenderProvider is the HTML of a provider's catalogue page.
func RenderProvider(d catalog.ProviderPage) ([]byte, error) {
	return render(providerTemplate(), d)
}

// RenderTofu is the HTML of the OpenTofu releases' catalogue page.
func RenderTofu(d catalog.TofuPage) ([]byte, error) {
	return render(tofuTemplate(), d)
}

func render(t *template.Template, d any) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
