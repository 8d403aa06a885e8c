package merged

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// ProviderMapping is one mapping's source, and whether its filters cover
// an address.
type ProviderMapping struct {
	Source source.Providers
	Covers func(names.Provider) bool
}

// Providers is several mappings that may cover one address, merged as
// OpenTofu merges the oci_mirror blocks of its CLI configuration (its
// MultiSource): the versions are those of every mapping covering the
// address; each version and platform comes from the first mapping, in
// order, that holds it. A mapping holding nothing of what is asked
// (source.Absent) is passed over; any other failure is the answer, as it
// is for tofu.
//
// With pull-through (Pulls), the first mapping covering an address is
// the one pull-through stores it into: its listing adds what the origin
// offers, a version no mapping holds is resolved by it from the origin,
// and pull URLs and downloads started early are its. A copy a mapping
// holds is served before the origin's; a copy a later mapping holds but
// may not serve does not keep the first from pulling, as with one
// mapping.
type Providers struct {
	Mappings []ProviderMapping
	// Pulls: the first mapping covering an address pulls it through.
	Pulls bool
	// Outage, with Pulls, is told that the first mapping's origin failed
	// (err) while it holds nothing of p and later mappings list versions:
	// it reports the listing degraded and is the warning the listing
	// carries ("" for none).
	Outage func(p names.Provider, via names.Via, err error) string
}

var (
	_ source.Providers     = (*Providers)(nil)
	_ source.HeldProviders = (*Providers)(nil)
	_ source.PulledFiles   = (*Providers)(nil)
	_ source.Warmer        = (*Providers)(nil)
)

// covering are the mappings whose filters cover p, in order; the first
// alone when none does (its answer says why).
func (m *Providers) covering(p names.Provider) []source.Providers {
	var out []source.Providers
	for _, mp := range m.Mappings {
		if mp.Covers(p) {
			out = append(out, mp.Source)
		}
	}
	if len(out) == 0 {
		return []source.Providers{m.Mappings[0].Source}
	}
	return out
}

// eachHolding calls read for each mapping covering p, in order, passing
// over those that hold nothing of what is asked; it stops at the first
// other failure, or when read says it is done. The error is the first
// mapping's when none held anything.
func (m *Providers) eachHolding(p names.Provider, read func(s source.Providers) (done bool, err error)) error {
	var first error
	held := false
	for _, s := range m.covering(p) {
		done, err := read(s)
		switch {
		case err != nil && source.Absent(err):
			if first == nil {
				first = err
			}
			continue
		case err != nil:
			return err
		}
		held = true
		if done {
			return nil
		}
	}
	if !held {
		return first
	}
	return nil
}

// ProviderVersions is the union of the mappings' listings: a version is
// left out (or unresolvable) only when every mapping listing it leaves it
// out; a version read by several mappings is the first's release, the
// others' in its Others, a copy a mapping holds coming before an origin's.
// With Pulls, the first mapping's origin failing while it holds nothing
// of p leaves the others' listing (degraded: Outage), or is the answer
// when they hold nothing either.
func (m *Providers) ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	out := source.ProviderListing{Unresolvable: map[string]string{}, Refused: map[string]string{}, Left: map[string]error{}, Releases: map[string]*source.ProviderRelease{}}
	listed, served := map[string]int{}, map[string]bool{}
	var first, outage error
	held := false
	for i, s := range m.covering(p) {
		l, err := s.ProviderVersions(ctx, p, via, opts)
		switch {
		case err == nil:
		case absentHere(err):
			first = cmp.Or(first, err)
			continue
		case i == 0 && m.Pulls && originFailed(err):
			outage = err
			continue
		default:
			return out, err
		}
		held = true
		out.At = source.Earliest(out.At, l.At)
		for _, e := range l.Versions {
			v := e.Version.String()
			j, ok := listed[v]
			if !ok {
				j = len(out.Versions)
				listed[v] = j
				out.Versions = append(out.Versions, e)
			}
			switch {
			case l.Left[v] != nil:
				if out.Left[v] == nil {
					out.Left[v] = l.Left[v]
				}
			case l.Unresolvable[v] != "":
				if out.Unresolvable[v] == "" {
					out.Unresolvable[v] = l.Unresolvable[v]
				}
			default:
				served[v] = true
				out.Versions[j].Stored = out.Versions[j].Stored || e.Stored
				addRelease(out.Releases, l.Releases[v])
				deprecate(&out.Deprecated, v, l.Deprecated[v])
				deprecate(&out.Vulnerable, v, l.Vulnerable[v])
			}
		}
		for tag, why := range l.Refused {
			out.Refused[tag] = why
		}
		for _, w := range l.Warnings {
			if !slices.Contains(out.Warnings, w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
	}
	for v := range served {
		delete(out.Left, v)
		delete(out.Unresolvable, v)
	}
	switch {
	case !held:
		return out, cmp.Or(outage, first)
	case outage != nil && m.Outage != nil:
		if w := m.Outage(p, via, outage); w != "" && !slices.Contains(out.Warnings, w) {
			out.Warnings = append(out.Warnings, w)
		}
	}
	return out, nil
}

// deprecate records in *m (a listing's Deprecated or Vulnerable) that
// the policy warns of version v with msg (""; it does not), as the first
// mapping serving it says: every mapping is judged by the same policy.
func deprecate(m *map[string]string, v, msg string) {
	if msg == "" || (*m)[v] != "" {
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[v] = msg
}

// addRelease adds a mapping's release of a version to the releases
// listed: the first, or a copy held after an origin's, is the version's
// release; a later copy held is among its Others; an origin's after any
// other is dropped.
func addRelease(releases map[string]*source.ProviderRelease, rel *source.ProviderRelease) {
	if rel == nil {
		return
	}
	v := rel.Version.String()
	switch first := releases[v]; {
	case first == nil || first.Pulled != nil && rel.Pulled == nil:
		c := *rel
		releases[v] = &c
	case rel.Pulled == nil:
		first.Others = append(first.Others, rel)
	}
}

// mergeRelease adds rel to releases, or its platforms and packages to the
// release of its version already there.
func mergeRelease(releases map[string]*source.ProviderRelease, rel *source.ProviderRelease) {
	if rel == nil {
		return
	}
	v := rel.Version.String()
	have, ok := releases[v]
	if !ok {
		c := *rel
		c.Platforms = slices.Clone(rel.Platforms)
		c.Packages = maps.Clone(rel.Packages)
		releases[v] = &c
		return
	}
	for _, pl := range rel.Platforms {
		if !slices.Contains(have.Platforms, pl) {
			have.Platforms = append(have.Platforms, pl)
		}
	}
	for pl, pkg := range rel.Packages {
		if have.Packages == nil {
			have.Packages = map[names.Platform]*source.ProviderPackage{}
		}
		if _, taken := have.Packages[pl]; !taken {
			have.Packages[pl] = pkg
		}
	}
}

// ResolveProvider is the release in the first mapping holding it and
// allowed to serve it. With Pulls, a version the first mapping covering
// p does not hold, and no mapping serves, is resolved by that mapping
// (from its origin).
func (m *Providers) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	srcs := m.covering(p)
	if len(srcs) == 1 {
		return srcs[0].ResolveProvider(ctx, p, v, via)
	}
	root, pull, err := m.resolveHeld(ctx, srcs, p, v, via)
	if root != nil || !pull || !m.Pulls {
		return root, err
	}
	return srcs[0].ResolveProvider(ctx, p, v, via)
}

// ResolveHeldProvider is the release in the first mapping holding it and
// allowed to serve it, nothing asked of an origin.
func (m *Providers) ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	root, _, err := m.resolveHeld(ctx, m.covering(p), p, v, via)
	return root, err
}

// resolveHeld is the release in the first of srcs holding it and allowed
// to serve it; pull says none does, and the first does not hold it at
// all (so it may pull it through).
func (m *Providers) resolveHeld(ctx context.Context, srcs []source.Providers, p names.Provider, v names.Version, via names.Via) (root *source.ProviderRoot, pull bool, err error) {
	var first error
	for i, s := range srcs {
		r, err := source.ResolveHeldProvider(ctx, s, p, v, via)
		switch {
		case err == nil:
			return r, false, nil
		case !source.Absent(err):
			return nil, false, err
		case i == 0:
			pull = source.IsNotHeld(err)
		}
		first = cmp.Or(first, err)
	}
	return nil, pull, first
}

// ResolveProviderAt is the release with that index digest in the first
// mapping holding it: the one an archive URL names.
func (m *Providers) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	var root *source.ProviderRoot
	err := m.eachHolding(p, func(s source.Providers) (bool, error) {
		r, err := s.ResolveProviderAt(ctx, p, v, index)
		root = r
		return err == nil, err
	})
	return root, err
}

// ReadProvider reads the release from every mapping holding its version:
// each platform's package comes from the first mapping holding the
// version for that platform (r's own mapping reads r).
func (m *Providers) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	if need&source.NeedPackages == 0 || r.Pulled != nil { // an origin's: no mapping holds its version
		return m.covering(r.Provider)[0].ReadProvider(ctx, r, need)
	}
	var out *source.ProviderRelease
	used := false
	err := m.eachHolding(r.Provider, func(s source.Providers) (bool, error) {
		root := r
		if used {
			var err error
			if root, err = source.ResolveHeldProvider(ctx, s, r.Provider, r.Version, names.ViaMirror); err != nil {
				return false, err
			}
			if sameRelease(root, r) {
				return false, nil
			}
		}
		rel, err := s.ReadProvider(ctx, root, need)
		if err != nil {
			return false, err
		}
		used = used || sameRelease(root, r)
		if out == nil {
			out = rel
			return false, nil
		}
		m := map[string]*source.ProviderRelease{rel.Version.String(): out}
		mergeRelease(m, rel)
		out = m[rel.Version.String()]
		return false, nil
	})
	return out, err
}

// sameRelease reports whether a and b are the same stored release.
func sameRelease(a, b *source.ProviderRoot) bool {
	return a.Root != nil && b.Root != nil && a.Root.Repo.Name() == b.Root.Repo.Name() && a.Root.Digest == b.Root.Digest
}

// OpenProviderPackage opens a stored release's package (from any mapping:
// the release names its repository).
func (m *Providers) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	return m.Mappings[0].Source.OpenProviderPackage(ctx, r, pl)
}

// OpenPulledFile is the first mapping's covering the provider, the one
// pull-through stores it into.
func (m *Providers) OpenPulledFile(ctx context.Context, f source.PulledFile) (*source.Blob, error) {
	pf, ok := m.covering(f.Provider)[0].(source.PulledFiles)
	if !ok {
		return nil, source.NotFoundf("provider %s is not pulled through from any allowed origin", f.Provider)
	}
	return pf.OpenPulledFile(ctx, f)
}

// WarmProvider is the first mapping's covering the provider, the one
// that resolved an origin's release.
func (m *Providers) WarmProvider(ctx context.Context, r *source.ProviderRoot, pl names.Platform) {
	if w, ok := m.covering(r.Provider)[0].(source.Warmer); ok {
		w.WarmProvider(ctx, r, pl)
	}
}
