package ingest

import (
	"context"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Mirror is one `oci-tofu mirror` run: the providers, then the OpenTofu
// releases, then the modules, each read in full before anything is
// mirrored.
type Mirror struct {
	Providers       []names.ProviderSpec
	ProviderOptions ProviderOptions
	// Tofu, when set, mirrors OpenTofu releases.
	Tofu    *TofuOptions
	Modules []ModuleSpec
	// ModuleOptions are the modules' (when there are any).
	ModuleOptions ModuleOptions
}

// Run mirrors what m names from the origins c reaches (Providers, Tofu,
// Modules), one result per release.
func (m Mirror) Run(ctx context.Context, c *origin.Client) []Result {
	var results []Result
	if len(m.Providers) > 0 {
		results = append(results, Providers(ctx, c, m.Providers, m.ProviderOptions)...)
	}
	if m.Tofu != nil {
		results = append(results, Tofu(ctx, c, *m.Tofu)...)
	}
	if len(m.Modules) > 0 {
		results = append(results, Modules(ctx, m.Modules, m.ModuleOptions)...)
	}
	return results
}
