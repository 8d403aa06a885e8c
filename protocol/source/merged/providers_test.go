package merged_test

import (
	"context"
	"errors"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/merged"
)

// fake is a mapping's source: the versions it holds, each with its
// platforms, or the failure it answers with.
type fake struct {
	versions map[string][]names.Platform
	fail     error
	resolved []string
}

func (f *fake) ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	if f.fail != nil {
		return source.ProviderListing{}, f.fail
	}
	if len(f.versions) == 0 {
		return source.ProviderListing{}, source.NotFoundf("provider %s has no versions", p)
	}
	l := source.ProviderListing{Releases: map[string]*source.ProviderRelease{}}
	for v, pls := range f.versions {
		ver := names.MustParseVersion(v)
		l.Versions = append(l.Versions, source.Listed{Version: ver, Stored: true})
		l.Releases[v] = &source.ProviderRelease{ProviderRoot: &source.ProviderRoot{Provider: p, Version: ver}, Platforms: pls}
	}
	return l, nil
}

func (f *fake) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	f.resolved = append(f.resolved, v.String())
	if f.fail != nil {
		return nil, f.fail
	}
	if _, ok := f.versions[v.String()]; !ok {
		return nil, source.MarkNotHeld(source.NotFoundf("no version %s", v))
	}
	return &source.ProviderRoot{Provider: p, Version: v}, nil
}

func (f *fake) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	return f.ResolveProvider(ctx, p, v, names.ViaMirror)
}

func (f *fake) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	rel := &source.ProviderRelease{ProviderRoot: r, Platforms: f.versions[r.Version.String()], Packages: map[names.Platform]*source.ProviderPackage{}}
	for _, pl := range rel.Platforms {
		rel.Packages[pl] = &source.ProviderPackage{Filename: pl.String(), Release: rel}
	}
	return rel, nil
}

func (f *fake) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	return nil, errors.ErrUnsupported
}

var (
	p     = names.Provider{Hostname: "example.com", Namespace: "acme", Type: "aws"}
	linux = names.Platform{OS: "linux", Arch: "amd64"}
	bsd   = names.Platform{OS: "freebsd", Arch: "amd64"}
)

func stack(sources ...*fake) *merged.Providers {
	m := &merged.Providers{}
	for _, s := range sources {
		m.Mappings = append(m.Mappings, merged.ProviderMapping{Source: s, Covers: func(names.Provider) bool { return true }})
	}
	return m
}

func TestMergedVersionsAreEveryMappingsAndPlatformsTheFirstHolders(t *testing.T) {
	first := &fake{versions: map[string][]names.Platform{"1.0.0": {linux}}}
	second := &fake{versions: map[string][]names.Platform{"1.0.0": {linux, bsd}, "1.1.0": {bsd}}}
	m := stack(first, second)
	l, err := m.ProviderVersions(context.Background(), p, names.ViaMirror, source.ListOptions{Need: source.NeedSummary})
	if err != nil || len(l.Versions) != 2 {
		t.Fatalf("versions %v, %v: want 1.0.0 and 1.1.0", l.Versions, err)
	}
	if rel := l.Releases["1.0.0"]; len(rel.Platforms) != 1 || len(rel.Others) != 1 {
		t.Errorf("1.0.0: %v with %d others, want the first mapping's release and the second's beside it", rel.Platforms, len(rel.Others))
	}
	root, err := m.ResolveProvider(context.Background(), p, names.MustParseVersion("1.0.0"), names.ViaMirror)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := m.ReadProvider(context.Background(), root, source.NeedPackages)
	if err != nil {
		t.Fatal(err)
	}
	if len(rel.Packages) != 2 || rel.Packages[linux].Release.ProviderRoot != root {
		t.Errorf("1.0.0's packages %v: want linux from the first mapping and freebsd from the second", rel.Packages)
	}
	if _, err := m.ResolveProvider(context.Background(), p, names.MustParseVersion("1.1.0"), names.ViaMirror); err != nil {
		t.Errorf("1.1.0, held by the second mapping alone: %v", err)
	}
}

func TestMergedAnswersTheFirstFailureThatIsNotAbsence(t *testing.T) {
	broken := errors.New("registry unavailable")
	m := stack(&fake{}, &fake{fail: broken}, &fake{versions: map[string][]names.Platform{"1.0.0": {linux}}})
	if _, err := m.ProviderVersions(context.Background(), p, names.ViaMirror, source.ListOptions{}); !errors.Is(err, broken) {
		t.Errorf("listing: %v, want the second mapping's failure (as tofu answers it), not the third's versions", err)
	}
	empty := stack(&fake{}, &fake{})
	_, err := empty.ResolveProvider(context.Background(), p, names.MustParseVersion("1.0.0"), names.ViaMirror)
	if !source.IsNotHeld(err) {
		t.Errorf("no mapping holds it: %v, want the first mapping's not-held answer", err)
	}
}
