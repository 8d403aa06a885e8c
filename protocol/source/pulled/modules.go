package pulled

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Modules is the module packages one mapping holds (Held) and the
// versions the origin module registry Origin offers besides, fetched,
// packed as `push module` packs them and stored into Held's repository by
// the pull-through engine on first download.
//
// Under a module rule with min_age or signers only a stored package has
// what the rule reads: the versions are Held's, and nothing is handed
// out from the origin. Listing the module pulls in the background the
// newest versions the origin offers that the registry does not hold and
// the rule's versions allow (their first sight, which starts their
// min_age clock when the proxy attests what it stores); a download of a
// version not held yet is not found, and starts its pull.
type Modules struct {
	Held   HeldModules
	Engine ModuleEngine
	Origin string
	// Own is set for the modules under the proxy's own hostname, which
	// pull through only as the engine's OwnModule allows.
	Own bool
	// Later are the module mappings merged after Held's: versions pushed
	// to their repositories keep the origin out as Held's do, unless the
	// repository is the origin's by name (pullthrough.ModuleDestinationIn):
	// of those mappings, the ones with a repository for a.
	Later func(a source.ModuleAddress) []LaterModuleRepo
	Rules source.Rules
	Log   *slog.Logger
}

// HeldModules is the source of what one mapping holds, which Modules
// wraps (held.Modules): its packages, and the repository of an address.
type HeldModules interface {
	source.Modules
	source.ModulePackages
	Repo(a source.ModuleAddress) (*store.Repo, error)
}

// LaterModuleRepo is a later mapping's repository of a module, and the
// mapping's template.
type LaterModuleRepo struct {
	Repo     *store.Repo
	Template store.RepositoryTemplate
}

var (
	_ source.Modules        = (*Modules)(nil)
	_ source.ModulePackages = (*Modules)(nil)
)

// factsRule is the name of the rule for a that reads facts, if one does.
func (m *Modules) factsRule(a source.ModuleAddress) (string, bool) {
	return m.Rules.FactsRule(names.KindModule, a.String())
}

// originMayBeAsked reports whether the origin may be asked about a
// module at all: under the proxy's own hostname only for an address
// --pull-through-own-modules covers (pullthrough/own.go), and only
// under the proxy's own host name as the operator gave it, never a Host
// the client made up nor another module origin's; on any path
// only while its repository holds no versions but pulled-through ones,
// unless the engine's rule lets the origin join pushed versions there
// (pullthrough.Engine.MayJoin: an exact own-module pattern, a repository
// named after the origin's host). Otherwise not even the module's name
// is sent to the origin; pushed says the repository's pushed versions
// are why.
func (m *Modules) originMayBeAsked(ctx context.Context, repo *store.Repo, a source.ModuleAddress) (ok, pushed bool, err error) {
	if m.Own && (m.Engine.OwnModule(a.Module) == pullthrough.OwnModuleHeldOnly || !m.Engine.OwnModulesUnder(a.Host)) {
		return false, false, nil
	}
	ok, err = m.Engine.MayJoin(ctx, m.Engine.ModuleDestination(m.Origin, repo.Reference(), a.Module), repo)
	if m.Later != nil {
		for _, later := range m.Later(a) {
			if err != nil || !ok {
				break
			}
			ok, err = m.laterMayJoin(ctx, later, a)
		}
	}
	return ok, err == nil && !ok, err
}

// laterMayJoin is MayJoin for a later mapping's repository of a.
func (m *Modules) laterMayJoin(ctx context.Context, later LaterModuleRepo, a source.ModuleAddress) (bool, error) {
	d := m.Engine.ModuleDestinationIn(later.Template, m.Origin, later.Repo.Reference(), a.Module)
	return m.Engine.MayJoin(ctx, d, later.Repo)
}

// ModuleVersions lists what the registry holds, what pull-through stored
// lately, and what the origin offers. With the origin failing: what the
// registry holds (logged and counted), or the origin's error when it
// holds nothing. Under a facts rule, or where the origin may not be
// asked: what the registry holds.
func (m *Modules) ModuleVersions(ctx context.Context, a source.ModuleAddress) (source.ModuleListing, error) {
	repo, err := m.Held.Repo(a)
	if err != nil {
		return source.ModuleListing{}, err
	}
	if ok, _, err := m.originMayBeAsked(ctx, repo, a); err != nil || !ok {
		if err != nil {
			return source.ModuleListing{}, err
		}
		return m.Held.ModuleVersions(ctx, a)
	}
	if _, ok := m.factsRule(a); ok {
		m.sightOrigin(ctx, repo, a)
		return m.Held.ModuleVersions(ctx, a)
	}
	l, err := m.Held.ModuleVersions(ctx, a)
	if err != nil && !source.Absent(err) {
		return l, err
	}
	have := map[string]bool{}
	for _, e := range l.Versions {
		have[e.Version.String()] = true
	}
	for _, sv := range m.Engine.Recent(repo.Name()) {
		if !have[sv.Version.String()] {
			l.Versions = append(l.Versions, source.Listed{Version: sv.Version, Stored: true})
			have[sv.Version.String()] = true
		}
	}
	offered, fetched, oerr := m.Engine.ModuleOffered(ctx, m.Origin, a.Module)
	if oerr != nil {
		if len(l.Versions) == 0 {
			return l, oerr
		}
		m.Engine.DegradedListing(names.KindModule, m.Origin+"/"+a.Module.String(), oerr)
		return l, nil
	}
	for canonical := range offered {
		if v, err := names.ParseVersion(canonical); err == nil && !have[v.String()] {
			l.Versions = append(l.Versions, source.Listed{Version: v})
			have[v.String()] = true
		}
	}
	l.At = source.Earliest(l.At, fetched)
	return l, nil
}

// ModuleRelease is the release the registry holds; a version
// pull-through stored lately that the registry does not answer for yet
// has no Root. Nothing is fetched, and the origin is not asked.
func (m *Modules) ModuleRelease(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	rel, err := m.Held.ModuleRelease(ctx, a, v)
	if !source.IsNotHeld(err) {
		return rel, err
	}
	if _, ok := m.factsRule(a); ok {
		return nil, err
	}
	repo, rerr := m.Held.Repo(a)
	if rerr != nil {
		return nil, err
	}
	for _, sv := range m.Engine.Recent(repo.Name()) {
		if sv.Version.Same(v) {
			return &source.ModuleRelease{Version: v}, nil
		}
	}
	return nil, err
}

// FetchModule is the package version v's tag names; for a version the
// registry does not hold, the engine fetches it from the origin and
// stores it (one fetch for all concurrent requests), and the answer is
// the package it stored. Under a facts rule the answer is not found, the
// pull started.
func (m *Modules) FetchModule(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	rel, err := m.Held.ModuleRelease(ctx, a, v)
	if !source.IsNotHeld(err) {
		return rel, err
	}
	repo, rerr := m.Held.Repo(a)
	if rerr != nil {
		return nil, err
	}
	if ok, pushed, gerr := m.originMayBeAsked(ctx, repo, a); gerr != nil || !ok {
		if pushed {
			return nil, source.NotFoundf("%s", pullthrough.ErrHeldAsPushed(fmt.Sprintf("%s %s", a.What(), v)))
		}
		return nil, cmp.Or(gerr, err)
	}
	if rule, ok := m.factsRule(a); ok {
		go m.sight(repo, a.Module, v)
		return nil, BeingFetched(a.What(), v, rule)
	}
	res, err := m.Engine.PullModule(ctx, m.Origin, repo.Reference(), a.Module, v)
	if err != nil {
		return nil, err
	}
	return &source.ModuleRelease{Version: v, Root: &source.Root{Repo: repo, Digest: res.Root.Digest}}, nil
}

// OpenModule is the held package: a download answer names only what is
// stored.
func (m *Modules) OpenModule(ctx context.Context, a source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	return m.Held.OpenModule(ctx, a, v, manifest)
}

// ModulePackage is the held package, for the log.
func (m *Modules) ModulePackage(ctx context.Context, a source.ModuleAddress, v names.Version) (*store.Repo, ocispec.Descriptor, error) {
	return m.Held.ModulePackage(ctx, a, v)
}

// sightOrigin starts the background pulls of the newest versions of a
// the origin offers that the registry does not hold (a repository that
// does not exist yet holds none) and the policy's version rules allow.
func (m *Modules) sightOrigin(ctx context.Context, repo *store.Repo, a source.ModuleAddress) {
	heldVersions, err := repo.Versions(ctx)
	if err != nil && store.FailureOf(err) != oci.FailureNotFound {
		return
	}
	offered, _, err := m.Engine.ModuleOffered(ctx, m.Origin, a.Module)
	if err != nil {
		m.Engine.DegradedListing(names.KindModule, m.Origin+"/"+a.Module.String(), err)
		return
	}
	var vs []names.Version
	for canonical := range offered {
		if v, err := names.ParseVersion(canonical); err == nil {
			vs = append(vs, v)
		}
	}
	for _, v := range FirstSight(heldVersions.Versions, m.Rules.Allowed(names.KindModule, a.String(), vs)) {
		go m.sight(repo, a.Module, v)
	}
}

// sight pulls version v of mod from the origin into repo, as a first
// download would, with nobody waiting for it.
func (m *Modules) sight(repo *store.Repo, mod names.Module, v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), FirstSightTimeout)
	defer cancel()
	if _, err := m.Engine.PullModule(ctx, m.Origin, repo.Reference(), mod, v); err != nil {
		m.Log.Debug("pull-through: the first sight of a module under a min_age or signers rule did not store it", "module", m.Origin+"/"+mod.String(), "version", v.String(), "error", err)
	}
}
