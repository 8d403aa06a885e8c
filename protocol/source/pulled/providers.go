package pulled

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Providers is the provider releases the registry holds (Held) and, for
// what it does not hold, what the allow-listed origin of the address
// offers: through the network mirror, the origin of the address's own
// host; through the registry protocol, under the proxy's own host name,
// the registry origin; either unless the repository holds versions
// somebody pushed (dependency confusion: such a provider is never merged
// with, nor pulled over by, an origin's provider of that name, and the
// origin is not asked about it; pullthrough.Engine.MayJoin, the rule the
// engine's writes obey).
//
// With several mappings each is a Providers of its own, and an address
// is pulled through only by the one Pulls names: pull-through stores
// into the first mapping covering the address (pullthrough.Engine);
// for the others Providers is what Held holds, nothing more.
type Providers struct {
	Held HeldProviders
	// Store holds the repositories pull-through stores into.
	Store  *store.Store
	Engine ProviderEngine
	Rules  source.Rules
	Log    *slog.Logger
	// Pulls reports whether Held's mapping is the one p is pulled
	// through into; nil: it is, for every address (Held's mappings are
	// all of them).
	Pulls func(p names.Provider) bool
	// Later are the repositories of the mappings after Held's covering
	// p, whose versions are listed with Held's (merged): on every path,
	// versions pushed to any of them keep p's origin out as those pushed
	// to Held's do, unless that mapping's own repository carries the
	// origin's host name (pullthrough.Engine.ProviderDestinationIn).
	Later func(p names.Provider) []LaterRepo
}

// HeldProviders is the source of what one mapping holds, which
// Providers wraps (held.Providers): its releases, and the repository
// of an address.
type HeldProviders interface {
	source.Providers
	Repo(p names.Provider) (*store.Repo, error)
}

var (
	_ source.Providers     = (*Providers)(nil)
	_ source.HeldProviders = (*Providers)(nil)
	_ source.PulledFiles   = (*Providers)(nil)
	_ source.Warmer        = (*Providers)(nil)
)

// pulls reports whether p is pulled through into Held's mapping.
func (h *Providers) pulls(p names.Provider) bool {
	return h.Pulls == nil || h.Pulls(p)
}

// target is the pull-through target of p asked for through via; none
// where Held's mapping does not pull p through, and none, with
// errPushed, where p's repositories hold pushed versions.
func (h *Providers) target(ctx context.Context, p names.Provider, via names.Via) (pullthrough.Target, bool, error) {
	if !h.pulls(p) {
		return pullthrough.Target{}, false, nil
	}
	t, ok := h.Engine.MirrorTarget(p)
	if via == names.ViaRegistry {
		t, ok = h.Engine.RegistryTarget(p)
	}
	if !ok {
		return t, false, nil
	}
	d, err := h.Engine.ProviderDestination(t)
	if err != nil { // no repository: nothing held, and Held reports the mapping
		return t, false, nil
	}
	return t, true, h.mayJoin(ctx, t, d)
}

// errPushed marks a target refused because its repositories hold
// pushed versions (pullthrough.ErrHeldAsPushed says so to clients).
var errPushed = errors.New("held as pushed")

// mayJoin is nil when t's origin may be listed with, and pulled into,
// what its repository (d's) and the later mappings' merged with it hold;
// errPushed when they hold pushed versions.
func (h *Providers) mayJoin(ctx context.Context, t pullthrough.Target, d pullthrough.Destination) error {
	ok, err := h.Engine.MayJoin(ctx, d, h.Store.Repo(d.Ref))
	if h.Later != nil {
		for _, l := range h.Later(t.Served) {
			if err != nil || !ok {
				break
			}
			ok, err = h.mayJoinLater(ctx, t, l)
		}
	}
	if err == nil && !ok {
		return errPushed
	}
	return err
}

// mayJoinLater is MayJoin for a later mapping's repository, judged by
// that mapping's own template: whether its name carries the origin's
// host, not the first mapping's.
func (h *Providers) mayJoinLater(ctx context.Context, t pullthrough.Target, l LaterRepo) (bool, error) {
	d, err := h.Engine.ProviderDestinationIn(l.Mapping, t)
	if err != nil {
		d = pullthrough.Destination{Ref: l.Repo.Reference()}
	}
	return h.Engine.MayJoin(ctx, d, l.Repo)
}

// pulledTarget is the pull-through target of an origin's release.
func pulledTarget(p *source.PulledProvider) pullthrough.Target {
	return pullthrough.Target{Served: p.Served, Origin: p.Origin, Via: p.Via}
}

// LaterRepo is a later mapping's repository of an address, and the mapping.
type LaterRepo struct {
	Repo    *store.Repo
	Mapping store.ProviderMapping
}

func (h *Providers) factsRule(p names.Provider) (string, bool) {
	return h.Rules.FactsRule(names.KindProvider, p.String())
}

// ProviderVersions lists what the registry holds, what pull-through
// stored lately and what the origin offers besides. With the origin
// failing: what the registry holds (logged and counted; through the
// registry protocol with a warning), or the origin's error when it holds
// nothing. Under a rule that reads facts: what the registry holds, the
// origin's newest versions sighted.
func (h *Providers) ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	t, ok, err := h.target(ctx, p, via)
	if errors.Is(err, errPushed) || err == nil && !ok {
		return h.Held.ProviderVersions(ctx, p, via, opts)
	}
	if err != nil {
		return source.ProviderListing{}, err
	}
	if _, facts := h.factsRule(p); facts {
		h.sightOrigin(ctx, p, t)
		return h.Held.ProviderVersions(ctx, p, via, opts)
	}
	l, err := h.Held.ProviderVersions(ctx, p, via, opts)
	if err != nil && !source.Absent(err) {
		return l, err
	}
	have := map[string]bool{}
	for _, e := range l.Versions {
		have[e.Version.String()] = true
	}
	for _, sv := range h.recent(p) {
		if !have[sv.Version.String()] {
			l.Versions = append(l.Versions, source.Listed{Version: sv.Version, Stored: true})
			have[sv.Version.String()] = true
		}
	}
	offered, fetched, oerr := h.Engine.Offered(ctx, t)
	if oerr != nil {
		if len(l.Versions) == 0 {
			return l, oerr
		}
		if w := degraded(h.Engine, t, oerr); w != "" {
			l.Warnings = append(l.Warnings, w)
		}
		return l, nil
	}
	for _, v := range offered.Versions {
		if !have[v.String()] {
			l.Versions = append(l.Versions, source.Listed{Version: v})
			have[v.String()] = true
		}
	}
	l.At = source.Earliest(l.At, fetched)
	return l, nil
}

// degraded reports a listing of what the registry holds, t's origin
// failing with err, and is the warning a registry protocol listing
// carries for it ("" for none).
func degraded(e ProviderEngine, t pullthrough.Target, err error) string {
	e.DegradedListing(names.KindProvider, t.Origin.String(), err)
	if t.Via == names.ViaRegistry && pullthrough.Classify(err) != pullthrough.FailureNotFound {
		return fmt.Sprintf("origin %s is unavailable: only the versions the proxy's registry holds are listed", t.Origin.Hostname)
	}
	return ""
}

// Degraded reports a listing of p through via made of what the registry
// holds, p's origin failing with err, and is the warning a registry
// protocol listing carries for it ("" for none): with several mappings,
// the listing of the others when the one pulling p through holds
// nothing of it (merged.Providers.Outage).
func Degraded(e ProviderEngine, p names.Provider, via names.Via, err error) string {
	t, ok := e.MirrorTarget(p)
	if via == names.ViaRegistry {
		t, ok = e.RegistryTarget(p)
	}
	if !ok {
		return ""
	}
	return degraded(e, t, err)
}

// recent are the versions pull-through stored lately in p's repository.
func (h *Providers) recent(p names.Provider) []pullthrough.StoredVersion {
	repo, err := h.Held.Repo(p)
	if err != nil {
		return nil
	}
	return h.Engine.Recent(repo.Name())
}

// ResolveProvider is the release the registry holds; for one it does not
// hold, the one pull-through stored lately or the origin offers (under a
// rule that reads facts: not found, its pull started).
func (h *Providers) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	root, err := h.Held.ResolveProvider(ctx, p, v, via)
	if !source.IsNotHeld(err) {
		return root, err
	}
	t, ok, terr := h.target(ctx, p, via)
	if errors.Is(terr, errPushed) {
		return nil, source.NotFoundf("%s", pullthrough.ErrHeldAsPushed(fmt.Sprintf("provider %s %s", p, v)))
	}
	if terr != nil || !ok {
		return nil, cmp.Or(terr, err)
	}
	if root := h.storedLately(ctx, p, v); root != nil {
		return root, nil
	}
	if rule, facts := h.factsRule(p); facts {
		go h.sight(t, v)
		return nil, BeingFetched("provider "+p.String(), v, rule)
	}
	pulled := &source.PulledProvider{Served: t.Served, Origin: t.Origin, Via: t.Via}
	for _, sv := range h.recent(p) {
		if sv.Version.Same(v) && sv.Registry != nil {
			pulled.Offer = sv.Registry
		}
	}
	if pulled.Offer == nil {
		offered, _, oerr := h.Engine.Offered(ctx, t)
		if oerr != nil {
			return nil, oerr
		}
		pulled.Offer = offered.ByVersion[v.String()]
	}
	if pulled.Offer == nil { // the engine's answer says why
		if _, err := h.Engine.ProviderRelease(ctx, t, v); err != nil {
			return nil, err
		}
		return nil, err
	}
	return &source.ProviderRoot{Provider: p, Version: v, Pulled: pulled}, nil
}

// storedLately is the release pull-through stored lately, read back from
// the registry by its index digest (its tag checked afresh): the held
// source may still remember the tag as missing from before the pull, and
// what was stored is served from the registry even with the origin down.
// nil when it was not stored lately or cannot be read back.
func (h *Providers) storedLately(ctx context.Context, p names.Provider, v names.Version) *source.ProviderRoot {
	for _, sv := range h.recent(p) {
		if sv.Version.Same(v) && sv.Root != "" {
			if root, err := h.Held.ResolveProviderAt(ctx, p, v, sv.Root); err == nil {
				return root
			}
		}
	}
	return nil
}

// ResolveHeldProvider is the release the registry holds, nothing asked
// of the origin.
func (h *Providers) ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	return h.Held.ResolveProvider(ctx, p, v, via)
}

// ResolveProviderAt is the stored release an archive URL names.
func (h *Providers) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	return h.Held.ResolveProviderAt(ctx, p, v, index)
}

// ReadProvider reads a stored release from the registry; of an origin's,
// its summary from the listing, its packages and checksums from the
// origin's release, verified against its signed SHA256SUMS (each package
// with its zh: hash alone: the h1 is known only once the package is
// unpacked, and offered once the release is stored).
func (h *Providers) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	if r.Pulled == nil {
		return h.Held.ReadProvider(ctx, r, need)
	}
	rel := &source.ProviderRelease{ProviderRoot: r, Protocols: r.Pulled.Offer.Protocols}
	for _, pl := range r.Pulled.Offer.Platforms {
		rel.Platforms = append(rel.Platforms, names.Platform{OS: pl.OS, Arch: pl.Arch})
	}
	if need&(source.NeedPackages|source.NeedChecksums) == 0 {
		return rel, nil
	}
	o, err := h.Engine.ProviderRelease(ctx, pulledTarget(r.Pulled), r.Version)
	if err != nil {
		return nil, err
	}
	r.Pulled.Sums, r.Pulled.Release = o.SumsDigest(), o
	rel.Protocols, rel.Platforms = o.Protocols, slices.Clone(o.Platforms)
	rel.Packages = make(map[names.Platform]*source.ProviderPackage, len(o.Platforms))
	rel.Checksums = &source.Checksums{Data: o.SHA256SUMS, Signature: o.Signature, Filenames: map[names.Platform]string{}}
	for _, pl := range o.Platforms {
		rel.Packages[pl] = &source.ProviderPackage{Filename: o.ZipName(pl), SHA256: o.ZipSHA256(pl),
			Hashes: []string{pkghash.ZH(o.ZipSHA256(pl))}, Keys: o.Downloads[pl].SigningKeys.GPGPublicKeys, Release: rel}
		rel.Checksums.Filenames[pl] = o.ZipName(pl)
	}
	return rel, nil
}

// OpenProviderPackage is a stored release's package.
func (h *Providers) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	return h.Held.OpenProviderPackage(ctx, r, pl)
}

// WarmProvider starts the download of an origin release's package for
// pl, as the client asks for it next.
func (h *Providers) WarmProvider(ctx context.Context, r *source.ProviderRoot, pl names.Platform) {
	if r.Pulled == nil || !h.pulls(r.Provider) {
		return
	}
	o, ok := r.Pulled.Release.(*ingest.ProviderOriginRelease)
	if !ok {
		return
	}
	if _, _, err := h.Engine.StartProvider(ctx, pulledTarget(r.Pulled), r.Version, o, o.ZipName(pl), false); err != nil && !errors.Is(err, pullthrough.ErrFinished) {
		h.Log.Debug("pull-through: could not start the download early", "error", err)
	}
}

// sightOrigin starts the background pulls of the newest versions t's
// origin offers that the registry does not hold and the policy's version
// rules allow.
func (h *Providers) sightOrigin(ctx context.Context, p names.Provider, t pullthrough.Target) {
	repo, err := h.Held.Repo(p)
	if err != nil {
		return
	}
	l, err := repo.Versions(ctx)
	if err != nil && !source.Absent(err) {
		return
	}
	heldVersions := l.Versions
	for _, sv := range h.Engine.Recent(repo.Name()) {
		if !slices.ContainsFunc(heldVersions, sv.Version.Same) {
			heldVersions = append(heldVersions, sv.Version)
		}
	}
	offered, _, err := h.Engine.Offered(ctx, t)
	if err != nil {
		h.Engine.DegradedListing(names.KindProvider, t.Origin.String(), err)
		return
	}
	for _, v := range FirstSight(heldVersions, h.Rules.Allowed(names.KindProvider, p.String(), offered.Versions)) {
		go h.sight(t, v)
	}
}

// sight pulls version v of t's origin into the registry, as a first
// request would, with nobody waiting for it.
func (h *Providers) sight(t pullthrough.Target, v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), FirstSightTimeout)
	defer cancel()
	rel, err := h.Engine.ProviderRelease(ctx, t, v)
	if err == nil {
		_, _, err = h.Engine.StartProvider(ctx, t, v, rel, "", false)
	}
	if err != nil && !errors.Is(err, pullthrough.ErrFinished) {
		h.Log.Debug("pull-through: the first sight of a release under a min_age or signers rule did not start its pull", "release", t.Origin.String()+" "+v.String(), "error", err)
	}
}
