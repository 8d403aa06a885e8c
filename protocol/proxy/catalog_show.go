package proxy

import (
	"context"
	"errors"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// The catalogue's documents for `oci-tofu show ADDRESS` (protocol/show):
// a server that does not listen builds them as its catalogue's JSON
// pages are built, judged by its policy and its vulnerability database.

// errNoCatalog: the server maps nothing the catalogue shows.
var errNoCatalog = errors.New("proxy: the server has no catalogue (no provider or module mapping)")

// CatalogProvider is the catalogue's document of provider p at version
// v (nil: its newest served), as its JSON page answers a caller reading
// everything (catalog.Handlers.ProviderDocument).
func (s *Server) CatalogProvider(ctx context.Context, p names.Provider, v *names.Version) (catalog.ProviderPage, error) {
	if s.catalog == nil {
		return catalog.ProviderPage{}, errNoCatalog
	}
	return s.catalog.ProviderDocument(ctx, p, v)
}

// CatalogModule is the catalogue's document of module a at version v
// (nil: its newest served), its root module's interface
// (catalog.Handlers.ModuleDocument).
func (s *Server) CatalogModule(ctx context.Context, a source.ModuleAddress, v *names.Version) (catalog.ModulePage, error) {
	if s.catalog == nil {
		return catalog.ModulePage{}, errNoCatalog
	}
	return s.catalog.ModuleDocument(ctx, a, v)
}
