package catalog

import (
	"context"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Handlers serve the catalogue.
type Handlers struct {
	Out *respond.Responder
	// Modules is the source of the modules held: what the registry holds,
	// judged by the policy as the Module Registry Protocol judges it,
	// nothing pulled through.
	Modules source.Modules
	// Held lists the module addresses the mapped repositories hold, those
	// of the registry hostname host where a mapping has no ${hostname}.
	Held func(ctx context.Context, host string) (Held, error)
	// Docs reads a stored module package's interface.
	Docs Docs
	// RenderIndex and RenderModule render the pages as HTML
	// (page.RenderCatalogIndex, page.RenderModule).
	RenderIndex  func(IndexPage) ([]byte, error)
	RenderModule func(ModulePage) ([]byte, error)
	// Providers is the source of the providers held, judged by the
	// policy as the provider protocols judge them, nothing pulled
	// through; nil when the server maps no providers (Held then lists
	// none). RenderProvider renders a provider's page
	// (page.RenderProvider); SBOMPath is a version's SBOM page, from the
	// server's root (providers.SBOMPath).
	Providers      source.Providers
	RenderProvider func(ProviderPage) ([]byte, error)
	SBOMPath       func(address, version string) string
	// Facts supply a provider page's facts beyond the release's own.
	Facts ProviderFacts
	// RenderProviderDoc renders a page of a provider's documentation
	// (page.RenderProviderDoc), RenderProviderDocCategory the list of a
	// category's pages (page.RenderProviderDocCategory).
	RenderProviderDoc         func(ProviderDocPage) ([]byte, error)
	RenderProviderDocCategory func(ProviderDocCategoryPage) ([]byte, error)
	// Tofu is the source of the OpenTofu releases held, judged as
	// TofuDL judges them, nothing pulled through; nil when the server
	// serves none. RenderTofu renders their page (page.RenderTofu);
	// TofuAPI and TofuDownload are TofuDL's API document and download
	// prefix, from the server's root (tofudl.APIPath, DownloadPrefix).
	Tofu                  source.Tofu
	RenderTofu            func(TofuPage) ([]byte, error)
	TofuAPI, TofuDownload string
}

// Docs reads the interface of the module package whose manifest is
// root: stored beside it, or extracted now (how says which).
type Docs interface {
	ModuleDoc(ctx context.Context, root source.Root) (doc *moduledoc.Doc, how string, err error)
	// SearchModule is what a search reads of the package's root module
	// (source.ModuleDocs.SearchModule: names, types, descriptions,
	// providers, resources, module calls), cached apart from whole
	// interfaces, with what a search made of it.
	SearchModule(ctx context.Context, root source.Root) (*source.Searched, error)
}

// How a module package's interface was had.
const (
	HowStored    = "stored"
	HowExtracted = "extracted"
)

// Held is what the mapped repositories hold.
type Held struct {
	Modules []source.ModuleAddress
	// Providers are the provider addresses the provider mappings hold,
	// each held by a mapping that covers it.
	Providers []names.Provider
	// Coverage says, per mapping, whether the registry could list it.
	Coverage []Coverage
}

// Coverage is how completely one mapping's repositories were listed.
type Coverage struct {
	Template string `json:"template"`
	Listed   bool   `json:"listed"`
	// Reason says why not, when not Listed.
	Reason string `json:"reason,omitempty"`
}

// ServeHTTP answers a catalogue page or its JSON.
func (h *Handlers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := respond.ReadRequest(h.Out, w, r, Prefix, ParsePath)
	if !ok {
		return
	}
	own, ok := h.Out.Hostname(w, r)
	if !ok {
		return
	}
	r = r.WithContext(WithOwnHost(r.Context(), own))
	if req.Index {
		h.serveIndex(w, r)
		return
	}
	if req.Provider != nil {
		h.serveProviderPage(w, r, req)
		return
	}
	if req.Tofu {
		h.serveTofuPage(w, r, req)
		return
	}
	if c := respond.ReaderOf(r.Context()); c != nil && !h.Out.InScope(w, r, c, names.KindModule, req.Address.String()) {
		return
	}
	h.serveModule(w, r, req)
}

type ownHostKey struct{}

// WithOwnHost is ctx carrying the registry hostname a catalogue request
// names the proxy's own modules under (respond.Responder.Hostname).
func WithOwnHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, ownHostKey{}, host)
}

// OwnHost is the registry hostname of a catalogue request (WithOwnHost):
// a module template without ${hostname} maps every host's address to
// one repository, so the catalogue's source reads such a template for
// this host only.
func OwnHost(ctx context.Context) (string, bool) {
	host, ok := ctx.Value(ownHostKey{}).(string)
	return host, ok
}

// addresser is how a request's client writes the addresses of modules:
// a module under the proxy's own registry hostname with the host (and
// port) the client reached the proxy by, or --registry-hostname; an
// origin's as the origin names it.
type addresser struct {
	own, shown string
}

// addresserOf is r's addresser.
func (h *Handlers) addresserOf(r *http.Request) addresser {
	own, err := h.Out.RegistryHostname(r)
	if err != nil {
		return addresser{}
	}
	if h.Out.Opts.RegistryHostname != "" {
		return addresser{own: own, shown: own}
	}
	return addresser{own: own, shown: clientHost(r.Host, own)}
}

// clientHost is host as a client writes it in an address: lower-case,
// with its port unless that is 443 (tofu and Terraform leave it out);
// own when host's port is not a number.
func clientHost(host, own string) string {
	host = strings.ToLower(host)
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.HasSuffix(host, "]") {
		return host
	}
	port := host[i+1:]
	if port == "" || strings.Trim(port, "0123456789") != "" || len(port) > 5 {
		return own
	}
	if port == "443" {
		return host[:i]
	}
	return host
}

// address is a as the client writes it.
func (ad addresser) address(a source.ModuleAddress) string {
	if ad.shown != "" && a.Host == ad.own {
		return ad.shown + "/" + a.Module.String()
	}
	return a.String()
}

// wantsJSON reports whether r asks for the JSON document rather than the
// page: ?format=json, or an Accept header naming application/json and
// not text/html.
func wantsJSON(r *http.Request) bool {
	if r.URL.Query().Get("format") == "json" {
		return true
	}
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// write answers v as JSON or as the page render makes of it. Neither is
// kept by caches: what a caller sees depends on its scope.
func write[T any](h *Handlers, w http.ResponseWriter, r *http.Request, v T, render func(T) ([]byte, error)) {
	w.Header().Set("Vary", "Accept, Authorization")
	if wantsJSON(r) {
		w.Header().Set("Cache-Control", "no-store")
		if HandOver(r.Context(), v) {
			w.WriteHeader(http.StatusOK)
			return
		}
		respond.WriteJSON(w, r, v)
		return
	}
	b, err := render(v)
	if err != nil {
		h.Out.Log.Error("rendering a catalogue page", "error", err)
		respond.WriteError(w, r, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	respond.WriteHTML(w, r, b)
}
