package merged

import (
	"context"
	"maps"
	"slices"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// ProviderMapping is one mapping's source, and whether its filters admit
// an address.
type ProviderMapping struct {
	Source source.Providers
	Admits func(names.Provider) bool
}

// Providers is several mappings that may admit one address, merged as
// OpenTofu merges the oci_mirror blocks of its CLI configuration (its
// MultiSource): the versions are those of every mapping admitting the
// address; each version and platform comes from the first mapping, in
// order, that holds it. A mapping holding nothing of what is asked
// (source.Absent) is passed over; any other failure is the answer, as it
// is for tofu. Pull URLs are the first mapping's.
type Providers struct {
	Mappings []ProviderMapping
}

var (
	_ source.Providers   = (*Providers)(nil)
	_ source.PulledFiles = (*Providers)(nil)
	_ source.Warmer      = (*Providers)(nil)
)

// admitting are the mappings whose filters admit p, in order; the first
// alone when none does (its answer says why).
func (m *Providers) admitting(p names.Provider) []source.Providers {
	var out []source.Providers
	for _, mp := range m.Mappings {
		if mp.Admits(p) {
			out = append(out, mp.Source)
		}
	}
	if len(out) == 0 {
		return []source.Providers{m.Mappings[0].Source}
	}
	return out
}

// eachHolding calls read for each mapping admitting p, in order, passing
// over those that hold nothing of what is asked; it stops at the first
// other failure, or when read says it is done. The error is the first
// mapping's when none held anything.
func (m *Providers) eachHolding(p names.Provider, read func(s source.Providers) (done bool, err error)) error {
	var first error
	held := false
	for _, s := range m.admitting(p) {
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
// others' in its Others.
func (m *Providers) ProviderVersions(ctx context.Context, p names.Provider, via source.Via, opts source.ListOptions) (source.ProviderListing, error) {
	out := source.ProviderListing{Unresolvable: map[string]string{}, Refused: map[string]string{}, Left: map[string]error{}, Releases: map[string]*source.ProviderRelease{}}
	listed, served := map[string]bool{}, map[string]bool{}
	err := m.eachHolding(p, func(s source.Providers) (bool, error) {
		l, err := s.ProviderVersions(ctx, p, via, opts)
		if err != nil {
			return false, err
		}
		out.At = source.Earliest(out.At, l.At)
		for _, e := range l.Versions {
			v := e.Version.String()
			if !listed[v] {
				listed[v] = true
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
				if rel := l.Releases[v]; rel != nil {
					if first := out.Releases[v]; first != nil {
						first.Others = append(first.Others, rel)
					} else {
						c := *rel
						out.Releases[v] = &c
					}
				}
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
		return false, nil
	})
	for v := range served {
		delete(out.Left, v)
		delete(out.Unresolvable, v)
	}
	return out, err
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

// ResolveProvider is the release in the first mapping holding it.
func (m *Providers) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via source.Via) (*source.ProviderRoot, error) {
	var root *source.ProviderRoot
	err := m.eachHolding(p, func(s source.Providers) (bool, error) {
		r, err := s.ResolveProvider(ctx, p, v, via)
		root = r
		return err == nil, err
	})
	return root, err
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
	if need&source.NeedPackages == 0 {
		return m.admitting(r.Provider)[0].ReadProvider(ctx, r, need)
	}
	var out *source.ProviderRelease
	used := false
	err := m.eachHolding(r.Provider, func(s source.Providers) (bool, error) {
		root := r
		if used {
			var err error
			if root, err = s.ResolveProvider(ctx, r.Provider, r.Version, source.ViaMirror); err != nil {
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

// OpenPulledFile is the first mapping's, the one pull-through stores into.
func (m *Providers) OpenPulledFile(ctx context.Context, f source.PulledFile) (*source.Blob, error) {
	pf, ok := m.Mappings[0].Source.(source.PulledFiles)
	if !ok {
		return nil, source.NotFoundf("provider %s is not pulled through from any allowed origin", f.Provider)
	}
	return pf.OpenPulledFile(ctx, f)
}

// WarmProvider is the first mapping's.
func (m *Providers) WarmProvider(ctx context.Context, r *source.ProviderRoot, pl names.Platform) {
	if w, ok := m.Mappings[0].Source.(source.Warmer); ok {
		w.WarmProvider(ctx, r, pl)
	}
}
