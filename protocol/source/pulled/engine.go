package pulled

import (
	"context"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// What the pulled sources ask of the pull-through engine, kind by kind
// (pullthrough.Engine answers all three; the proxy's sources.go passes
// it): the pulled sources know the engine only through these, its
// values (targets, destinations, pulls, files) and its errors.

// ProviderEngine is what Providers asks of the engine.
type ProviderEngine interface {
	MirrorTarget(p names.Provider) (pullthrough.Target, bool)
	RegistryTarget(p names.Provider) (pullthrough.Target, bool)
	TargetOf(via names.Via, p names.Provider, registryHost string) (pullthrough.Target, bool)
	ProviderDestination(t pullthrough.Target) (pullthrough.Destination, error)
	ProviderDestinationIn(m store.ProviderMapping, t pullthrough.Target) (pullthrough.Destination, error)
	MayJoin(ctx context.Context, d pullthrough.Destination, repos ...*store.Repo) (bool, error)
	Offered(ctx context.Context, t pullthrough.Target) (pullthrough.Listing, time.Time, error)
	ProviderRelease(ctx context.Context, t pullthrough.Target, v names.Version) (*ingest.ProviderOriginRelease, error)
	StartProvider(ctx context.Context, t pullthrough.Target, v names.Version, rel *ingest.ProviderOriginRelease, demand string, wait bool) (*pullthrough.Pull, *pullthrough.File, error)
	InflightPulls
}

// ModuleEngine is what Modules asks of the engine.
type ModuleEngine interface {
	OwnModule(mod names.Module) pullthrough.OwnModuleAccess
	OwnModulesUnder(host string) bool
	ModuleDestination(host string, ref oci.Reference, mod names.Module) pullthrough.Destination
	ModuleDestinationIn(tpl store.RepositoryTemplate, host string, ref oci.Reference, mod names.Module) pullthrough.Destination
	MayJoin(ctx context.Context, d pullthrough.Destination, repos ...*store.Repo) (bool, error)
	ModuleOffered(ctx context.Context, host string, mod names.Module) (map[string]string, time.Time, error)
	PullModule(ctx context.Context, host string, ref oci.Reference, mod names.Module, v names.Version) (pullthrough.Stored, error)
	Recent(repo string) []pullthrough.StoredVersion
	DegradedListing(kind names.Kind, what string, err error)
}

// TofuEngine is what Tofu asks of the engine.
type TofuEngine interface {
	TofuOrigin() *ingest.TofuOrigin
	TofuOffered(ctx context.Context) (pullthrough.TofuListing, time.Time, error)
	TofuRelease(ctx context.Context, v names.Version) (*ingest.TofuOriginRelease, error)
	StartTofu(ctx context.Context, v names.Version, rel *ingest.TofuOriginRelease, demand string, wait bool) (*pullthrough.Pull, *pullthrough.File, error)
	InflightPulls
}

// InflightPulls is what a provider's and OpenTofu's pulled source ask of the
// engine's pulls: the one in flight, the one completed, the releases
// stored lately, and the listings answered without the origin.
type InflightPulls interface {
	InflightFile(key, name string) (*pullthrough.Pull, *pullthrough.File, error)
	Completed(ctx context.Context, key string) (pullthrough.Stored, bool)
	Distrust(key string)
	Recent(repo string) []pullthrough.StoredVersion
	DegradedListing(kind names.Kind, what string, err error)
}
