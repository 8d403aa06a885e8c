// Command fakeprovider replaces OpenTofu's provider-simple-v6/main (with
// go build -overlay) so that tofu show -json -config can read, offline,
// configurations whose resources belong to any provider: it is OpenTofu's
// own simple test provider, answering with its simple_resource schema for
// every resource, data source and ephemeral resource type named in MODULEDOC_FAKE_TYPES
// (comma-separated).
package main

import (
	"context"
	"os"
	"strings"

	"github.com/opentofu/opentofu/internal/grpcwrap"
	plugin "github.com/opentofu/opentofu/internal/plugin6"
	simple "github.com/opentofu/opentofu/internal/provider-simple-v6"
	"github.com/opentofu/opentofu/internal/providers"
	"github.com/opentofu/opentofu/internal/tfplugin6"
)

type anyTypes struct{ providers.Interface }

func (a anyTypes) GetProviderSchema(ctx context.Context) providers.GetProviderSchemaResponse {
	resp := a.Interface.GetProviderSchema(ctx)
	managed, data, ephemeral := resp.ResourceTypes["simple_resource"], resp.DataSources["simple_resource"], resp.EphemeralResources["simple_resource"]
	resp.ResourceTypes = map[string]providers.Schema{}
	resp.DataSources = map[string]providers.Schema{}
	resp.EphemeralResources = map[string]providers.Schema{}
	for _, t := range strings.Split(os.Getenv("MODULEDOC_FAKE_TYPES"), ",") {
		if t != "" {
			resp.ResourceTypes[t], resp.DataSources[t], resp.EphemeralResources[t] = managed, data, ephemeral
		}
	}
	return resp
}

func main() {
	plugin.Serve(&plugin.ServeOpts{
		GRPCProviderFunc: func() tfplugin6.ProviderServer {
			return grpcwrap.Provider6(anyTypes{simple.Provider()})
		},
	})
}
