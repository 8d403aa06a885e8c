package gate

import (
	"context"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Modules gates a source of modules: the policy file on the versions,
// and on a stored package's manifest the deciding rule's facts and the
// attestation rule (always on for modules, pull-through or not).
type Modules struct {
	Inner source.Modules
	Judge Judge
}

var (
	_ source.Modules        = (*Modules)(nil)
	_ source.ModulePackages = (*Modules)(nil)
)

// ModuleVersions are the inner source's versions the policy allows; the
// others are Denied.
func (m *Modules) ModuleVersions(ctx context.Context, a source.ModuleAddress) (source.ModuleListing, error) {
	l, err := m.Inner.ModuleVersions(ctx, a)
	if err != nil {
		return l, err
	}
	kept, deprecated := allowed(m.Judge, names.KindModule, a.String(), l.Listing)
	out := source.ModuleListing{Listing: kept, Denied: l.Denied, Deprecated: deprecated}
	if len(kept.Versions) == len(l.Versions) {
		return out, nil // every version kept: none denied
	}
	for _, e := range l.Versions {
		if !listed(kept, e.Version) {
			out.Denied = append(out.Denied, e.Version)
		}
	}
	return out, nil
}

// listed reports whether l lists v.
func listed(l source.Listing, v names.Version) bool {
	for _, e := range l.Versions {
		if e.Version.Same(v) {
			return true
		}
	}
	return false
}

// ModuleRelease is the inner source's release v, when the policy allows
// the version and its facts and attestations admit what is stored.
func (m *Modules) ModuleRelease(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	return m.judged(ctx, a, v, m.Inner.ModuleRelease)
}

// FetchModule is the inner source's release v for a download, gated as
// ModuleRelease: nothing is fetched for a version the policy denies.
func (m *Modules) FetchModule(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	return m.judged(ctx, a, v, m.Inner.FetchModule)
}

func (m *Modules) judged(ctx context.Context, a source.ModuleAddress, v names.Version,
	read func(context.Context, source.ModuleAddress, names.Version) (*source.ModuleRelease, error)) (*source.ModuleRelease, error) {
	if err := m.Judge.Version(names.KindModule, a.String(), a.What(), v); err != nil {
		return nil, err
	}
	rel, err := read(ctx, a, v)
	if err != nil {
		return nil, err
	}
	if rel.Root != nil {
		if err := m.judgeRoot(ctx, a, v, *rel.Root); err != nil {
			return nil, err
		}
	}
	return rel, nil
}

// OpenModule is the inner source's package, when the policy allows the
// version and the facts and attestations of the manifest it was opened
// by admit it.
func (m *Modules) OpenModule(ctx context.Context, a source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	if err := m.Judge.Version(names.KindModule, a.String(), a.What(), v); err != nil {
		return nil, err
	}
	b, err := m.Inner.OpenModule(ctx, a, v, manifest)
	if err != nil {
		return nil, err
	}
	if b.Repo != nil {
		if err := m.judgeRoot(ctx, a, v, source.Root{Repo: b.Repo, Digest: manifest}); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ModulePackage is the inner source's, unjudged: it is for the log.
func (m *Modules) ModulePackage(ctx context.Context, a source.ModuleAddress, v names.Version) (*store.Repo, ocispec.Descriptor, error) {
	return source.ModulePackageOf(ctx, m.Inner, a, v)
}

// judgeRoot judges a stored module package: the deciding rule's facts,
// then the attestation rule.
func (m *Modules) judgeRoot(ctx context.Context, a source.ModuleAddress, v names.Version, root source.Root) error {
	if _, err := m.Judge.Facts(ctx, names.KindModule, a.String(), a.What(), v, root); err != nil {
		return err
	}
	return m.Judge.Attested(ctx, names.KindModule, a.What(), v, root, true)
}
