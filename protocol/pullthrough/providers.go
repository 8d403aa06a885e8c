package pullthrough

import (
	"context"
	"fmt"
	"strings"

	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Target is a provider as a request names it and where pull-through
// fetches it from.
type Target struct {
	Served names.Provider // as served (the network mirror's address, or PROXY/NS/TYPE)
	Origin names.Provider // at the origin registry
	// Via is how it was asked for: through the network mirror, whose
	// addresses name the origin, or through the registry protocol, whose
	// addresses name the proxy.
	Via names.Via
}

// MirrorTarget is the target of a network mirror request: the provider's
// own hostname, if it is an allowed origin. A hostname not on the list is
// never contacted.
func (e *Engine) MirrorTarget(p names.Provider) (Target, bool) {
	if e == nil {
		return Target{}, false
	}
	if _, ok := e.opts.Origins[p.Hostname]; !ok {
		return Target{}, false
	}
	return Target{Served: p, Origin: p, Via: names.ViaMirror}, true
}

// RegistryTarget is the target of a registry protocol request: the same
// namespace and type at RegistryOrigin, for an address under the
// proxy's own host name (OwnHost) only.
func (e *Engine) RegistryTarget(p names.Provider) (Target, bool) {
	if e == nil || e.opts.RegistryOrigin == "" || len(e.opts.Origins) == 0 || !e.OwnHost(p.Hostname) || e.anotherOriginsHost(p.Hostname) {
		return Target{}, false
	}
	o := p
	o.Hostname = e.opts.RegistryOrigin
	return Target{Served: p, Origin: o, Via: names.ViaRegistry}, true
}

// anotherOriginsHost reports whether host, the registry protocol's host
// name (the proxy's own, OwnHost), is an allowed origin's other than
// the registry origin: the
// registry origin's releases would be stored in, and then served by the
// network mirror from, that origin's repositories.
func (e *Engine) anotherOriginsHost(host string) bool {
	for h := range e.opts.Origins {
		if strings.EqualFold(h, host) && !strings.EqualFold(h, e.opts.RegistryOrigin) {
			return true
		}
	}
	return false
}

// TargetOf is the target a pull URL names (via, the provider), checked as
// when the metadata named it; registryHost is the proxy's hostname for
// the registry protocol.
func (e *Engine) TargetOf(via names.Via, p names.Provider, registryHost string) (Target, bool) {
	switch via {
	case names.ViaMirror:
		return e.MirrorTarget(p)
	case names.ViaRegistry:
		if t, ok := e.RegistryTarget(p); ok && registryHost == p.Hostname {
			return t, true
		}
	}
	return Target{}, false
}

// Listing is an origin registry's version listing, by canonical version.
type Listing struct {
	Versions  names.VersionList
	ByVersion map[string]*wire.RegistryVersion
}

// Offered reads (cached for ListingTTL, then revalidated in the
// background) the versions the origin offers for a provider, and when
// they were read.
func (e *Engine) Offered(ctx context.Context, t Target) (Listing, time.Time, error) {
	res, err := e.listings.Get(ctx, t.Origin.String(), func(ctx context.Context) (Listing, int64, error) {
		vs, err := e.opts.Client.Versions(ctx, t.Origin)
		if err != nil {
			e.reportOriginError(names.KindProvider, t.Origin.String(), err)
			return Listing{}, 0, err
		}
		l := Listing{ByVersion: map[string]*wire.RegistryVersion{}}
		for _, v := range vs {
			pv, err := names.ParseVersionLoose(v.Version)
			if err != nil || l.ByVersion[pv.String()] != nil {
				continue
			}
			l.ByVersion[pv.String()] = v
			l.Versions = append(l.Versions, pv)
		}
		l.Versions.Sort()
		return l, int64(len(vs))*256 + 256, nil
	})
	if err != nil {
		return Listing{}, res.Fetched, originError(t.Origin.Hostname, err)
	}
	return res.Val, res.Fetched, nil
}

func providerFailKey(t Target, v names.Version) string {
	return "provider " + t.Origin.String() + " " + v.String()
}

// ProviderRelease is the origin's release of version v, its signature
// and digests verified (cached); a failure is remembered for FailureTTL.
func (e *Engine) ProviderRelease(ctx context.Context, t Target, v names.Version) (*ingest.ProviderOriginRelease, error) {
	fk := providerFailKey(t, v)
	if err := e.remembered(ctx, names.KindProvider, fk, t.Origin.Hostname); err != nil {
		return nil, err
	}
	res, err := e.releases.Get(ctx, fk, func(ctx context.Context) (*ingest.ProviderOriginRelease, int64, error) {
		l, _, err := e.Offered(ctx, t)
		if err != nil {
			return nil, 0, err
		}
		entry := l.ByVersion[v.String()]
		if entry == nil {
			return nil, 0, fmt.Errorf("%s %s: %w", t.Origin, v, origin.ErrNotFound)
		}
		rel, err := ingest.ResolveProviderRelease(ctx, e.opts.Client, t.Origin, entry, ingest.ResolveOptions{Concurrency: 8, EnforceGPGExpiration: e.opts.EnforceGPGExpiration})
		if err != nil {
			e.reportOriginError(names.KindProvider, t.Origin.String()+" "+v.String(), err)
			if kind := Classify(err); kind == FailureTampered {
				e.rememberFailure(fk, err)
				e.metrics.result(names.KindProvider, kind)
			}
			return nil, 0, err
		}
		if len(rel.Warnings) > 0 {
			e.log.Warn("pull-through: origin release accepted with warnings", "release", t.Origin.String()+" "+v.String(), "warnings", rel.Warnings)
		}
		cost := len(rel.SHA256SUMS) + len(rel.Signature) + 4096
		for _, k := range rel.Keys {
			cost += len(k.Armored)
		}
		return rel, int64(cost), nil
	})
	if err != nil {
		return nil, originError(t.Origin.Hostname, err)
	}
	return res.Val, nil
}

// ProviderPullKey names a pull: the repository, the version and the
// origin's SHA256SUMS.
func ProviderPullKey(repo string, v names.Version, sums digest.Digest) string {
	return "provider " + repo + " " + v.String() + " " + sums.Encoded()
}

// ProviderKey is the pull key of an origin release of target t.
func (e *Engine) ProviderKey(t Target, v names.Version, sums digest.Digest) (string, error) {
	ref, err := e.mappings.Map(t.Served)
	if err != nil {
		return "", err
	}
	return ProviderPullKey(ref.Name(), v, sums), nil
}

// StartProvider returns the pull of an origin release, starting it when
// none runs, and the file demand (if any) on its way. ErrFinished means
// the release was stored meanwhile: read it from the registry. With wait,
// a release another replica pulls is waited for (within ctx); without,
// it is an error.
func (e *Engine) StartProvider(ctx context.Context, t Target, v names.Version, rel *ingest.ProviderOriginRelease, demand string, wait bool) (*Pull, *File, error) {
	dst, err := e.ProviderDestination(t)
	if err != nil {
		return nil, nil, err
	}
	key := ProviderPullKey(dst.Ref.Name(), v, rel.SumsDigest())
	return e.start(ctx, names.KindProvider, key, providerFailKey(t, v), t.Origin.Hostname, &dst, func() (*Pull, error) { return e.newProviderPull(t, v, rel, dst, key) }, demand, wait)
}

// newProviderPull prepares the pull of a provider release into dst.
func (e *Engine) newProviderPull(t Target, v names.Version, rel *ingest.ProviderOriginRelease, dst Destination, key string) (*Pull, error) {
	ref := dst.Ref
	repo, err := e.registry.Open(ref)
	if err != nil {
		return nil, err
	}
	byName := map[string]names.Platform{}
	for _, pl := range rel.Platforms {
		byName[rel.ZipName(pl)] = pl
	}
	files := make([]string, 0, len(byName))
	for name := range byName {
		files = append(files, name)
	}
	p, err := e.newPull(names.KindProvider, key, t.Origin.String()+" "+v.String(), repo, files, rel.WriteChecksums)
	if err != nil {
		return nil, err
	}
	p.failKey, p.provider = providerFailKey(t, v), rel
	p.ingested = &events.VersionIngested{Kind: events.KindProvider, Address: t.Served.String(), Version: v.String(), Via: events.ViaPullThrough, Repository: ref.Name()}
	p.keys = newKeysCheck(t.Served.String(), v, rel.KeyID, rel.Keys)
	p.open = func(ctx context.Context, name string) (*origin.Body, error) {
		return rel.OpenZip(ctx, e.opts.Client, byName[name], e.opts.MaxFileSize)
	}
	p.want = func(name string) string { return rel.Sums[name] }
	p.mediaType = func(string) string { return oci.MediaTypeZip }
	p.finish = func(ctx context.Context, dir string) (Stored, error) {
		// Attested (with Options.Attest) and the repository marked as
		// pulled through before the version is tagged, once guard has
		// found no version pushed meanwhile: a repository holding a
		// version without the mark reads as pushed to (own.go).
		mark := oci.PushOptions{BeforeTag: func(ctx context.Context, root ocispec.Descriptor) error {
			if err := e.guard(ctx, &dst); err != nil {
				return err
			}
			e.markPulledThrough(ctx, repo, ref, root)
			return nil
		}}
		res, err := rel.PushDirAttested(ctx, dir, repo, ref.Name(), mark, e.opts.Attest)
		if err == nil && rel.IndexNote != "" {
			e.log.Warn("pull-through: pushed a release, but not into the version index", "release", t.Origin.String()+" "+v.String(), "warning", rel.IndexNote)
		}
		if err == nil {
			e.markPulledThrough(ctx, repo, ref, res.Root) // when it was up to date: no BeforeTag
			rv := &wire.RegistryVersion{Version: v.String(), Protocols: rel.Protocols}
			for _, pl := range rel.Platforms {
				rv.Platforms = append(rv.Platforms, wire.RegistryPlatform{OS: pl.OS, Arch: pl.Arch})
			}
			e.recent.add(ref.Name(), StoredVersion{Version: v, Registry: rv, Root: res.Root.Digest})
		}
		return Stored{Root: res.Root}, err
	}
	return p, nil
}
