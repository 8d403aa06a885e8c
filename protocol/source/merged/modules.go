package merged

import (
	"cmp"
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Modules is several module mappings (proxy.Options.ModuleMappings, in
// order) as one source, each mapping a source of its own
// (gated: what a mapping may not serve is passed over).
type Modules struct {
	Mappings []source.Modules
	// Pulls: the first mapping pulls through; a version no mapping holds
	// is fetched by it (stored into its repository).
	Pulls bool
	// Outage reports the first mapping's origin failing while the others
	// are listed.
	Outage func(a source.ModuleAddress, err error)
	Log    *slog.Logger
}

var (
	_ source.Modules        = (*Modules)(nil)
	_ source.ModulePackages = (*Modules)(nil)
)

// ModuleVersions lists the versions of every mapping with some of a,
// and logs a version two of them hold with different packages.
func (m *Modules) ModuleVersions(ctx context.Context, a source.ModuleAddress) (source.ModuleListing, error) {
	if len(m.Mappings) == 1 {
		return m.Mappings[0].ModuleVersions(ctx, a)
	}
	var ls []source.Listing
	listedBy := map[string][]int{}
	var out source.ModuleListing
	var absent, outage, unmapped error
	var at time.Time
	for i, src := range m.Mappings {
		l, err := src.ModuleVersions(ctx, a)
		switch {
		case err != nil && source.IsNotMapped(err):
			unmapped = cmp.Or(unmapped, err)
			continue
		case err != nil && absentHere(err):
			absent = cmp.Or(absent, err)
			continue
		case err != nil && i == 0 && m.Pulls && originFailed(err):
			outage = err
			continue
		case err != nil:
			return source.ModuleListing{Listing: source.Listing{At: l.At}}, err
		}
		at = source.Earliest(at, l.At)
		ls = append(ls, l.Listing)
		for _, e := range l.Versions {
			if e.Stored {
				listedBy[e.Version.String()] = append(listedBy[e.Version.String()], i)
			}
		}
		out.Denied = append(out.Denied, l.Denied...)
		for v, msg := range l.Deprecated { // one policy judges every mapping
			if out.Deprecated == nil {
				out.Deprecated = map[string]string{}
			}
			out.Deprecated[v] = msg
		}
	}
	out.Listing = union(ls)
	out.At = at
	out.Denied = distinct(out.Denied)
	if len(out.Versions) == 0 {
		if err := cmp.Or(outage, cmp.Or(absent, unmapped)); err != nil {
			return source.ModuleListing{Listing: source.Listing{At: at}}, err
		}
		return out, nil
	}
	if outage != nil && m.Outage != nil {
		m.Outage(a, outage)
	}
	m.logShadowed(ctx, a, out.Listing, listedBy)
	return out, nil
}

// distinct is vs without repeats, oldest first.
func distinct(vs []names.Version) []names.Version {
	seen := map[string]bool{}
	var out []names.Version
	for _, v := range vs {
		if !seen[v.String()] {
			seen[v.String()] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LessThan(out[j]) })
	return out
}

// logShadowed logs each version more than one mapping holds whose tags
// name different packages: the first mapping's is served, the others
// are shadowed. What the mappings hold is compared as the registry
// answers it (the store caches it); a tag that cannot be read is not a
// conflict here.
func (m *Modules) logShadowed(ctx context.Context, a source.ModuleAddress, l source.Listing, listedBy map[string][]int) {
	for _, e := range l.Versions {
		key := e.Version.String()
		holders := listedBy[key]
		if len(holders) < 2 {
			continue
		}
		repo, served, err := source.ModulePackageOf(ctx, m.Mappings[holders[0]], a, e.Version)
		if err != nil {
			continue
		}
		for _, i := range holders[1:] {
			if other, zip, err := source.ModulePackageOf(ctx, m.Mappings[i], a, e.Version); err == nil && zip.Digest != served.Digest {
				m.Log.LogAttrs(ctx, slog.LevelInfo, "module version shadowed: an earlier mapping holds another package of it, and serves it",
					slog.String("module", a.Module.String()), slog.String("version", key),
					slog.String("served_from", repo.Name()), slog.String("shadowed", other.Name()))
			}
		}
	}
}

// ModuleRelease is version v as the first mapping serving it stores it;
// when none does, the first refusal of a copy a mapping holds, else one
// pull-through stored lately, else the first mapping's "not held".
func (m *Modules) ModuleRelease(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	if len(m.Mappings) == 1 {
		return m.Mappings[0].ModuleRelease(ctx, a, v)
	}
	served, lately, ans, err := m.held(ctx, a, v)
	switch {
	case err != nil:
		return nil, err
	case served != nil:
		return served, nil
	case ans.refused != nil:
		return nil, ans.refused
	case lately != nil:
		return lately, nil
	}
	return nil, ans.absent()
}

// FetchModule is version v as the first mapping serving it stores it;
// with pull-through, when no mapping holds it at all, the one the first
// mapping pulls. Otherwise, the first refusal of a copy a mapping holds,
// or the first mapping's "not held".
func (m *Modules) FetchModule(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	if len(m.Mappings) == 1 {
		return m.Mappings[0].FetchModule(ctx, a, v)
	}
	served, _, ans, err := m.held(ctx, a, v)
	switch {
	case err != nil:
		return nil, err
	case served != nil:
		return served, nil
	case ans.refused != nil:
		return nil, ans.refused
	case m.Pulls && ans.mapped == 0:
		return m.Mappings[0].FetchModule(ctx, a, v)
	}
	return nil, ans.absent()
}

// held walks the mappings for the first serving version v as stored
// (nothing fetched): served is its release; lately is the first release
// without a root (stored lately by pull-through), which serves only when
// no mapping does.
func (m *Modules) held(ctx context.Context, a source.ModuleAddress, v names.Version) (served, lately *source.ModuleRelease, ans answers, err error) {
	ans, err = walk(len(m.Mappings), func(i int) (bool, error) {
		rel, err := m.Mappings[i].ModuleRelease(ctx, a, v)
		switch {
		case err != nil:
			return false, err
		case rel.Root == nil:
			if lately == nil {
				lately = rel
			}
			return false, nil
		}
		served = rel
		return true, nil
	})
	return served, lately, ans, err
}

// OpenModule is the package with that manifest digest in the first
// mapping holding it (the one a download answer named).
func (m *Modules) OpenModule(ctx context.Context, a source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	if len(m.Mappings) == 1 {
		return m.Mappings[0].OpenModule(ctx, a, v, manifest)
	}
	var b *source.Blob
	ans, err := walk(len(m.Mappings), func(i int) (bool, error) {
		var err error
		b, err = m.Mappings[i].OpenModule(ctx, a, v, manifest)
		return err == nil, err
	})
	switch {
	case err != nil:
		return nil, err
	case b != nil:
		return b, nil
	}
	return nil, cmp.Or(ans.first, ans.unmapped)
}

// ModulePackage is the first mapping's holding one, for the log.
func (m *Modules) ModulePackage(ctx context.Context, a source.ModuleAddress, v names.Version) (*store.Repo, ocispec.Descriptor, error) {
	var repo *store.Repo
	var zip ocispec.Descriptor
	ans, err := walk(len(m.Mappings), func(i int) (bool, error) {
		r, z, err := source.ModulePackageOf(ctx, m.Mappings[i], a, v)
		if err == nil {
			repo, zip = r, z
		}
		return err == nil, err
	})
	if err == nil && repo == nil {
		err = cmp.Or(ans.first, ans.unmapped)
	}
	return repo, zip, err
}
