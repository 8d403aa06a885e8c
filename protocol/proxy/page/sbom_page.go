package page

import (
	"bytes"
	"html/template"
	"sync"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/providers"
)

var sbomTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("sbom.html.tmpl").Funcs(template.FuncMap{
		"slash": breakAfterSlashes,
	}).ParseFS(pageFS, "sbom.html.tmpl", "style.html.tmpl"))
})

// RenderSBOM is the HTML of an SBOM page (providers.SBOMs serves it), in
// the page's style.
func RenderSBOM(d providers.SBOMPage) ([]byte, error) {
	var b bytes.Buffer
	if err := sbomTemplate().Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
