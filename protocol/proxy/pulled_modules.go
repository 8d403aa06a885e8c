package proxy

import (
	"cmp"
	"context"
	"sort"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// pulledModules is the moduleSource with pull-through: what the registry
// holds (heldModules), and the versions the origin module registry offers
// besides, fetched, packed as `push module` packs them and stored by the
// pull-through engine on first download.
type pulledModules struct {
	*heldModules
	engine *pullthrough.Engine
	// origin is the origin registry the versions are pulled from.
	origin string
	// own is set for the modules under the proxy's own hostname, which
	// pull through only as the engine's OwnModule allows.
	own bool
}

// originMayBeAsked reports whether the origin may be asked about mod at
// all: always on an origin's own paths; under the proxy's own hostname
// only for an address --pull-through-own-modules covers, and through a
// wildcard only while its repository holds no versions but pulled-through
// ones (pullthrough/own.go). Otherwise not even the module's name is
// sent to the origin.
func (m *pulledModules) originMayBeAsked(ctx context.Context, repo *store.Repo, mod names.Module) (bool, error) {
	if !m.own {
		return true, nil
	}
	switch m.engine.OwnModule(mod) {
	case pullthrough.OwnModuleListed:
		return true, nil
	case pullthrough.OwnModuleHeldOnly:
		return false, nil
	}
	pushed, err := holdsPushedVersions(ctx, repo)
	return err == nil && !pushed, err
}

// holdsPushedVersions reports whether repo holds versions and lacks the
// tag pull-through marks its repositories with (pullthrough/own.go): the
// versions were pushed, and under the proxy's own hostname no origin is
// merged with them, pulled over them, or asked about them.
func holdsPushedVersions(ctx context.Context, repo *store.Repo) (bool, error) {
	l, err := repo.Versions(ctx)
	switch {
	case source.Absent(err):
		return false, nil
	case err != nil:
		return false, err
	case len(l.Versions) == 0:
		return false, nil
	}
	marked, err := repo.HasTag(ctx, pullthrough.PulledThroughTag)
	return !marked, err
}

// versionsDoc lists what the registry holds, what pull-through stored
// lately, and what the origin offers, those two as the policy file
// allows (docs/policy.md). With the origin failing: what the registry
// holds (logged and counted), or the origin's error when it holds
// nothing.
func (m *pulledModules) versionsDoc(ctx context.Context, repo *store.Repo, host string, mod names.Module) (any, time.Time, error) {
	if ok, err := m.originMayBeAsked(ctx, repo, mod); err != nil || !ok {
		if err != nil {
			return nil, time.Time{}, err
		}
		return m.heldModules.versionsDoc(ctx, repo, host, mod)
	}
	if m.factsRule(host, mod) { // pulled_facts_modules.go
		return m.versionsUnderFacts(ctx, repo, host, mod)
	}
	held := []string{}
	d, at, err := m.heldModules.versionsDoc(ctx, repo, host, mod)
	switch {
	case err == nil:
		for _, v := range d.(wire.ModuleVersions).Modules[0].Versions {
			held = append(held, v.Version)
		}
	case !source.Absent(err):
		return nil, at, err
	}
	vs := map[string]names.Version{}
	for _, s := range held {
		if v, err := names.ParseVersion(s); err == nil {
			vs[v.String()] = v
		}
	}
	var more []names.Version
	for _, sv := range m.engine.Recent(repo.Name()) {
		more = append(more, sv.Version)
	}
	offered, fetched, oerr := m.engine.ModuleOffered(ctx, m.origin, mod)
	for canonical := range offered {
		if v, err := names.ParseVersion(canonical); err == nil {
			more = append(more, v)
		}
	}
	for _, v := range m.s.policyAllowed(policy.KindModule, moduleAddress(host, mod), more) { // policy.go
		vs[v.String()] = v
	}
	if oerr != nil {
		if len(vs) == 0 {
			return nil, at, oerr
		}
		m.engine.DegradedListing("module", m.origin+"/"+mod.String(), oerr)
		return versionsOf(vs), at, nil
	}
	return versionsOf(vs), earliestNonZero(at, fetched), nil
}

// versionsOf is the versions document of vs, oldest first.
func versionsOf(vs map[string]names.Version) wire.ModuleVersions {
	sorted := make([]names.Version, 0, len(vs))
	for _, v := range vs {
		sorted = append(sorted, v)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].LessThan(sorted[j]) })
	list := wire.ModuleVersionList{Versions: []wire.ModuleVersion{}}
	for _, v := range sorted {
		list.Versions = append(list.Versions, wire.ModuleVersion{Version: v.String()})
	}
	return wire.ModuleVersions{Modules: []wire.ModuleVersionList{list}}
}

// release reads the package version v's tag names; for a version the
// registry does not hold (and the policy allows: heldModules.release
// refuses a denied one first), the engine fetches it from the origin and
// stores it (one fetch for all concurrent requests), and the answer
// names the package it stored, when the policy's min_age and signers and
// the attestation rule admit it.
func (m *pulledModules) release(ctx context.Context, repo *store.Repo, host string, mod names.Module, v names.Version) (ocispec.Descriptor, error) {
	manifest, err := m.heldModules.release(ctx, repo, host, mod, v)
	if !source.IsNotHeld(err) {
		return manifest, err
	}
	if ok, gerr := m.originMayBeAsked(ctx, repo, mod); gerr != nil || !ok {
		return manifest, cmp.Or(gerr, err)
	}
	if m.factsRule(host, mod) { // pulled_facts_modules.go
		return manifest, m.notYetHeld(repo, host, mod, v)
	}
	res, err := m.engine.PullModule(ctx, m.origin, repo.Reference(), mod, v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	root := releaseRoot{repo: repo, subject: res.Root.Digest}
	if err := m.s.factsDenial(ctx, policy.KindModule, moduleAddress(host, mod), "module "+mod.String(), v, root); err != nil { // policy_facts.go
		return ocispec.Descriptor{}, err
	}
	return res.Root, admitted(ctx, repo, store.KindModule, "module "+mod.String(), v, res.Root.Digest)
}
