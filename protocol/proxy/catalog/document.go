package catalog

import (
	"context"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// The catalogue's documents outside HTTP: what `oci-tofu show ADDRESS`
// prints, built by the same code as the JSON pages, so that the command
// and the catalogue say the same of a version.

// ProviderDocument is the document of provider p's page at version v
// (nil: its newest served), as a caller reading everything gets it.
// Unlike the page it does not ask whether p is held under the request's
// own host: a command has no request, and names the address it maps.
func (h *Handlers) ProviderDocument(ctx context.Context, p names.Provider, v *names.Version) (ProviderPage, error) {
	if h.Providers == nil {
		return ProviderPage{}, source.NotFoundf("no provider template maps provider %s", p)
	}
	return h.providerPage(ctx, Request{Provider: &p, Version: v}, nil)
}

// ModuleDocument is the document of module a's page at version v (nil:
// its newest served), its root module's interface, as a caller reading
// everything gets it; a template without ${hostname} is read for a's
// host.
func (h *Handlers) ModuleDocument(ctx context.Context, a source.ModuleAddress, v *names.Version) (ModulePage, error) {
	return h.modulePage(WithOwnHost(ctx, a.Host), Request{Address: a, Version: v}, addresser{})
}

// PackageFacts are one platform's package of the version shown: its
// file name, the zip's digest and size, and its lock-file hashes (a
// trusted h1, if any, and zh, the zip's SHA-256).
type PackageFacts struct {
	Platform string   `json:"platform"`
	Filename string   `json:"filename"`
	Digest   string   `json:"digest"`
	Size     int64    `json:"size"`
	Hashes   []string `json:"hashes"`
}

// packageFacts are the packages of the release at root, by platform,
// read as the protocols read them (source.NeedPackages).
func (h *Handlers) packageFacts(ctx context.Context, root *source.ProviderRoot, platforms []names.Platform) ([]PackageFacts, error) {
	rel, err := h.Providers.ReadProvider(ctx, root, source.NeedPackages)
	if err != nil {
		return nil, err
	}
	out := []PackageFacts{}
	for _, pl := range platforms {
		pkg, ok := rel.Packages[pl]
		if !ok {
			continue
		}
		out = append(out, PackageFacts{Platform: pl.String(), Filename: pkg.Filename, Digest: pkg.Layer.Digest.String(), Size: pkg.Layer.Size, Hashes: nonNil(pkg.Hashes)})
	}
	return out, nil
}
