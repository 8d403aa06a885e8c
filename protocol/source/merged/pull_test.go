package merged_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/merged"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// puller is a mapping's source with pull-through, as gate(pulled(held))
// answers: the versions it holds (held), and those its origin offers
// (offered) unless the origin is down. It is safe for concurrent use.
type puller struct {
	held, offered map[string][]names.Platform
	down          error

	pulls, opened, warmed atomic.Int32
}

var (
	_ source.HeldProviders = (*puller)(nil)
	_ source.PulledFiles   = (*puller)(nil)
	_ source.Warmer        = (*puller)(nil)
)

func (f *puller) ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	l := source.ProviderListing{Releases: map[string]*source.ProviderRelease{}}
	for _, v := range slices.Sorted(maps.Keys(f.held)) {
		ver := names.MustParseVersion(v)
		l.Versions = append(l.Versions, source.Listed{Version: ver, Stored: true})
		l.Releases[v] = &source.ProviderRelease{ProviderRoot: f.stored(p, ver), Platforms: f.held[v]}
	}
	if f.down != nil {
		if len(l.Versions) == 0 {
			return l, f.down
		}
		return l, nil
	}
	for _, v := range slices.Sorted(maps.Keys(f.offered)) {
		if f.held[v] == nil {
			ver := names.MustParseVersion(v)
			l.Versions = append(l.Versions, source.Listed{Version: ver})
			l.Releases[v] = &source.ProviderRelease{ProviderRoot: f.origin(p, ver), Platforms: f.offered[v]}
		}
	}
	if len(l.Versions) == 0 {
		return l, source.NotFoundf("provider %s has no versions", p)
	}
	return l, nil
}

// repos are the fakes' repositories (a store that never reads), and
// owners the fake holding each: any mapping reads the release a root
// names, as held does.
var (
	repos  = store.New(store.Options{})
	owners sync.Map
)

func (f *puller) stored(p names.Provider, v names.Version) *source.ProviderRoot {
	repo := repos.Repo(oci.Reference{Registry: "registry.example", Repository: fmt.Sprintf("m%p", f)})
	owners.Store(repo.Name(), f)
	return &source.ProviderRoot{Provider: p, Version: v, Root: &source.Root{Repo: repo, Digest: digest.FromString(v.String())}}
}

func (f *puller) origin(p names.Provider, v names.Version) *source.ProviderRoot {
	return &source.ProviderRoot{Provider: p, Version: v, Pulled: &source.PulledProvider{Served: p, Origin: p, Via: names.ViaMirror}}
}

func (f *puller) ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	if f.held[v.String()] == nil {
		return nil, source.MarkNotHeld(source.NotFoundf("no version %s", v))
	}
	return f.stored(p, v), nil
}

func (f *puller) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	root, err := f.ResolveHeldProvider(ctx, p, v, via)
	if !source.IsNotHeld(err) {
		return root, err
	}
	f.pulls.Add(1)
	switch {
	case f.down != nil:
		return nil, f.down
	case f.offered[v.String()] == nil:
		return nil, err
	}
	return f.origin(p, v), nil
}

func (f *puller) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	return f.ResolveHeldProvider(ctx, p, v, names.ViaMirror)
}

func (f *puller) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	var pls []names.Platform
	if r.Pulled != nil {
		pls = f.offered[r.Version.String()]
	} else if owner, ok := owners.Load(r.Root.Repo.Name()); ok {
		pls = owner.(*puller).held[r.Version.String()]
	}
	rel := &source.ProviderRelease{ProviderRoot: r, Platforms: pls, Packages: map[names.Platform]*source.ProviderPackage{}}
	for _, pl := range pls {
		rel.Packages[pl] = &source.ProviderPackage{Filename: pl.String(), Release: rel}
	}
	return rel, nil
}

func (f *puller) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	return nil, errors.ErrUnsupported
}

func (f *puller) OpenPulledFile(ctx context.Context, pf source.PulledFile) (*source.Blob, error) {
	f.opened.Add(1)
	return &source.Blob{Name: "pulled"}, nil
}

func (f *puller) WarmProvider(ctx context.Context, r *source.ProviderRoot, pl names.Platform) {
	f.warmed.Add(1)
}

func pulling(ms ...source.Providers) *merged.Providers {
	m := &merged.Providers{Pulls: true}
	for _, s := range ms {
		m.Mappings = append(m.Mappings, merged.ProviderMapping{Source: s, Covers: func(names.Provider) bool { return true }})
	}
	return m
}

var v1, v2 = names.MustParseVersion("1.0.0"), names.MustParseVersion("2.0.0")

// With pull-through, a version held only by a later mapping is served
// from it, the origin not asked; a version no mapping holds is the first
// mapping's, from its origin; a version the first holds is its own.
func TestPullingMappingServesLaterMappingsCopiesBeforeTheOrigin(t *testing.T) {
	ctx := context.Background()
	first := &puller{held: map[string][]names.Platform{"0.9.0": {linux}}, offered: map[string][]names.Platform{"1.0.0": {linux}, "2.0.0": {linux}}}
	second := &puller{held: map[string][]names.Platform{"1.0.0": {linux, bsd}}}
	m := pulling(first, second)

	root, err := m.ResolveProvider(ctx, p, v1, names.ViaMirror)
	if err != nil || root.Pulled != nil || root.Root.Repo.Name() != second.stored(p, v1).Root.Repo.Name() {
		t.Fatalf("1.0.0, held by the second mapping: %+v, %v; want the second mapping's copy", root, err)
	}
	if n := first.pulls.Load(); n != 0 {
		t.Errorf("the origin was asked %d times for a version a later mapping holds", n)
	}
	rel, err := m.ReadProvider(ctx, root, source.NeedPackages)
	if err != nil || len(rel.Packages) != 2 {
		t.Errorf("1.0.0 read: %+v, %v; want the second mapping's two platforms", rel, err)
	}
	root, err = m.ResolveProvider(ctx, p, v2, names.ViaMirror)
	if err != nil || root.Pulled == nil {
		t.Fatalf("2.0.0, held by no mapping: %+v, %v; want the first mapping's pull", root, err)
	}
	if rel, err := m.ReadProvider(ctx, root, source.NeedPackages); err != nil || rel.Pulled == nil || len(rel.Packages) != 1 {
		t.Errorf("2.0.0 read: %+v, %v; want the origin's release", rel, err)
	}
	if root, err := m.ResolveProvider(ctx, p, names.MustParseVersion("0.9.0"), names.ViaMirror); err != nil || root.Root == nil {
		t.Errorf("0.9.0, held by the first mapping: %+v, %v", root, err)
	}
	if _, err := m.ResolveProvider(ctx, p, names.MustParseVersion("3.0.0"), names.ViaMirror); !source.IsNotHeld(err) {
		t.Errorf("3.0.0, held and offered nowhere: %v, want the first mapping's answer", err)
	}

	l, err := m.ProviderVersions(ctx, p, names.ViaMirror, source.ListOptions{Need: source.NeedSummary})
	if err != nil || len(l.Versions) != 3 {
		t.Fatalf("listing: %v, %v; want 0.9.0, 1.0.0 and 2.0.0", l.Versions, err)
	}
	for _, e := range l.Versions {
		rel := l.Releases[e.Version.String()]
		wantStored := e.Version.String() != "2.0.0"
		if e.Stored != wantStored || (rel.Pulled == nil) != wantStored {
			t.Errorf("%s listed stored %v with an origin's release %v; want stored %v", e.Version, e.Stored, rel.Pulled != nil, wantStored)
		}
	}
	if rel := l.Releases["1.0.0"]; len(rel.Platforms) != 2 || len(rel.Others) != 0 {
		t.Errorf("1.0.0 listed: %v with %d others; want the second mapping's copy alone", rel.Platforms, len(rel.Others))
	}
}

// A later mapping's copy the policy refuses does not keep the first
// mapping from pulling a version it does not hold (as with one mapping);
// a refused copy in the first mapping does.
func TestPullingMappingPullsOverALaterRefusedCopy(t *testing.T) {
	ctx := context.Background()
	first := &puller{offered: map[string][]names.Platform{"1.0.0": {linux}}}
	denied := &source.Denied{Msg: "denied", Rule: "r"}
	m := pulling(first, &refusing{err: denied})
	if root, err := m.ResolveProvider(ctx, p, v1, names.ViaMirror); err != nil || root.Pulled == nil {
		t.Errorf("1.0.0 refused in the second mapping: %+v, %v; want the first mapping's pull", root, err)
	}
	m = pulling(&refusing{err: denied}, first)
	if _, err := m.ResolveProvider(ctx, p, v1, names.ViaMirror); !errors.Is(err, denied) {
		t.Errorf("1.0.0 refused in the first mapping: %v, want the refusal", err)
	}
	if n := first.pulls.Load(); n != 1 {
		t.Errorf("%d pulls, want 1", n)
	}
}

// refusing holds a copy of every version it may not serve.
type refusing struct {
	puller
	err error
}

func (f *refusing) ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	return nil, f.err
}

func (f *refusing) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	return nil, f.err
}

// The first mapping's origin failing while it holds nothing of the
// provider leaves the later mappings' versions listed (reported as a
// degraded listing, with its warning); it is the answer when they hold
// nothing either. An origin that does not have the provider is passed
// over silently.
func TestPullingMappingsOriginOutageDegradesTheListing(t *testing.T) {
	ctx := context.Background()
	down := &pullthrough.Error{Failure: pullthrough.FailureUnreachable, Msg: "origin unreachable"}
	var reported []error
	m := pulling(&puller{down: down}, &puller{held: map[string][]names.Platform{"1.0.0": {linux}}})
	m.Outage = func(_ names.Provider, via names.Via, err error) string {
		reported = append(reported, err)
		return "origin is unavailable"
	}
	l, err := m.ProviderVersions(ctx, p, names.ViaRegistry, source.ListOptions{})
	if err != nil || len(l.Versions) != 1 || !slices.Equal(l.Warnings, []string{"origin is unavailable"}) {
		t.Errorf("listing with the first mapping's origin down: %v, warnings %q, %v; want the second's 1.0.0 with the outage's warning", l.Versions, l.Warnings, err)
	}
	if len(reported) != 1 || !errors.Is(reported[0], down) {
		t.Errorf("outage reported %v, want the origin's failure once", reported)
	}
	if root, err := m.ResolveProvider(ctx, p, v1, names.ViaMirror); err != nil || root.Root == nil {
		t.Errorf("1.0.0 with the origin down: %+v, %v; want the second mapping's copy", root, err)
	}
	alone := pulling(&puller{down: down}, &puller{})
	if _, err := alone.ProviderVersions(ctx, p, names.ViaMirror, source.ListOptions{}); !errors.Is(err, down) {
		t.Errorf("nothing held anywhere, the origin down: %v, want the origin's failure", err)
	}
	missing := &pullthrough.Error{Failure: pullthrough.FailureNotFound, Msg: "no such provider at the origin"}
	reported = nil
	m.Mappings[0].Source = &puller{down: missing}
	if l, err := m.ProviderVersions(ctx, p, names.ViaMirror, source.ListOptions{}); err != nil || len(l.Versions) != 1 || len(reported) != 0 {
		t.Errorf("the origin without the provider: %v, %v, reported %v; want the second's listing, nothing reported", l.Versions, err, reported)
	}
}

// Pull URLs and early downloads go to the first mapping covering the
// provider, the one pull-through stores it into.
func TestPullURLsAreTheFirstAdmittingMappings(t *testing.T) {
	ctx := context.Background()
	other, pulls := &puller{}, &puller{}
	m := &merged.Providers{Pulls: true, Mappings: []merged.ProviderMapping{
		{Source: other, Covers: func(q names.Provider) bool { return q.Namespace != p.Namespace }},
		{Source: pulls, Covers: func(names.Provider) bool { return true }},
	}}
	if _, err := m.OpenPulledFile(ctx, source.PulledFile{Provider: p, Version: v1}); err != nil {
		t.Fatal(err)
	}
	m.WarmProvider(ctx, pulls.origin(p, v1), linux)
	if other.opened.Load()+other.warmed.Load() != 0 || pulls.opened.Load() != 1 || pulls.warmed.Load() != 1 {
		t.Errorf("pull URL and warming went to the mapping not admitting the provider (%d, %d), not the one pulling it (%d, %d)",
			other.opened.Load(), other.warmed.Load(), pulls.opened.Load(), pulls.warmed.Load())
	}
}

// Listings and resolutions run concurrently over shared mappings (the
// proxy's handlers do).
func TestPullingMappingsConcurrently(t *testing.T) {
	ctx := context.Background()
	first := &puller{held: map[string][]names.Platform{"0.9.0": {linux}}, offered: map[string][]names.Platform{"2.0.0": {linux}}}
	m := pulling(first, &puller{held: map[string][]names.Platform{"1.0.0": {linux, bsd}}})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			v := []names.Version{v1, v2}[i%2]
			root, err := m.ResolveProvider(ctx, p, v, names.ViaMirror)
			if err == nil {
				_, err = m.ReadProvider(ctx, root, source.NeedPackages)
			}
			if err == nil && (root.Pulled != nil) != (v == v2) {
				err = fmt.Errorf("%s resolved to %+v", v, root)
			}
			if err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			l, err := m.ProviderVersions(ctx, p, names.ViaMirror, source.ListOptions{Need: source.NeedSummary})
			if err == nil && len(l.Versions) != 3 {
				err = fmt.Errorf("listed %v", l.Versions)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
