package gate

import (
	"context"
	"errors"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Providers gates a source of provider releases: the policy on versions
// and platforms, and on stored releases the deciding rule's facts and the
// attestation rule. Each reads versions at most the store's concurrency
// at once (store.Store.EachVersion).
type Providers struct {
	Inner source.Providers
	Judge Judge
	Each  func(ctx context.Context, vs names.VersionList, fn func(ctx context.Context, i int, v names.Version) error) error
}

var (
	_ source.Providers     = (*Providers)(nil)
	_ source.HeldProviders = (*Providers)(nil)
	_ source.PulledFiles   = (*Providers)(nil)
	_ source.Warmer        = (*Providers)(nil)
)

func what(p names.Provider) string { return "provider " + p.String() }

// ProviderVersions lists the inner source's versions and says why those
// that may not be served are left out (ProviderListing.Left): the policy
// first, from one snapshot, with nothing read; then, when the deciding
// rule reads facts, the attestation rule is configured or the lister
// needs releases read, each remaining version is resolved, judged and
// read, at most the store's concurrency at once.
func (g *Providers) ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	addr := p.String()
	inner := opts
	inner.Want = func(v names.Version) bool {
		return g.Judge.Version(names.KindProvider, addr, what(p), v) == nil && (opts.Want == nil || opts.Want(v))
	}
	// The version index may stand in for the versions' own indexes only
	// where nothing but the listing's document needs them.
	inner.Hinted = opts.Need == source.NeedSummary && !g.Judge.ReadsRoot(names.KindProvider, addr, true)
	l, err := g.Inner.ProviderVersions(ctx, p, via, inner)
	if err != nil {
		return l, err
	}
	verdicts := g.Judge.Versions(names.KindProvider, addr, what(p), versionsOf(l.Listing)) // one policy for the whole list
	if l.Left == nil {
		l.Left = map[string]error{}
	}
	l.Deprecated = verdicts.Deprecated
	var read names.VersionList
	for _, e := range l.Versions {
		v := e.Version.String()
		switch {
		case verdicts.Denied[v] != nil:
			l.Left[v] = verdicts.Denied[v]
			delete(l.Releases, v)
		case l.Releases[v] != nil && l.Releases[v].FromIndex && inner.Hinted:
			l.Releases[v] = g.platforms(l.Releases[v]) // listed from the version index: nothing to read
		case l.Unresolvable[v] == "":
			read = append(read, e.Version)
		}
	}
	if opts.Need == 0 && !g.Judge.ReadsRoot(names.KindProvider, addr, true) {
		return l, nil
	}
	return g.readListed(ctx, p, via, opts.Need, read, l)
}

// readListed resolves, judges and (with need) reads each version of
// read, recording the releases and why others are left out; a failure
// to read that is not one version's fails the listing.
func (g *Providers) readListed(ctx context.Context, p names.Provider, via names.Via, need source.Need, read names.VersionList, l source.ProviderListing) (source.ProviderListing, error) {
	rels := make([]*source.ProviderRelease, len(read))
	left := make([]error, len(read))
	warned := make([]string, len(read))
	err := g.Each(ctx, read, func(ctx context.Context, i int, v names.Version) error {
		rel, warning, err := g.readListedVersion(ctx, p, v, via, need)
		switch {
		case err == nil:
			rels[i], warned[i] = rel, warning // each index by one goroutine
			return nil
		case leavesOut(err):
			left[i] = err
			return nil
		}
		return err
	})
	if err != nil {
		return l, err
	}
	if l.Releases == nil {
		l.Releases = map[string]*source.ProviderRelease{}
	}
	for i, v := range read {
		switch {
		case left[i] != nil:
			l.Left[v.String()] = left[i]
			continue
		case need != 0:
			l.Releases[v.String()] = rels[i]
		}
		if warned[i] != "" {
			if l.Vulnerable == nil {
				l.Vulnerable = map[string]string{}
			}
			l.Vulnerable[v.String()] = warned[i]
		}
	}
	return l, nil
}

// leavesOut reports whether err leaves one version out of a listing: it
// is denied, gone, or not a valid artifact of its kind.
func leavesOut(err error) bool {
	var d *source.Denied
	return errors.As(err, &d) || source.Absent(err) || store.Skippable(err)
}

// readListedVersion is one listed version: its attestation is judged
// before its facts, as listings always have.
func (g *Providers) readListedVersion(ctx context.Context, p names.Provider, v names.Version, via names.Via, need source.Need) (*source.ProviderRelease, string, error) {
	root, err := g.Inner.ResolveProvider(ctx, p, v, via)
	if err != nil {
		return nil, "", err
	}
	var warning string
	if root.Root != nil {
		if err := g.Judge.Attested(ctx, names.KindProvider, what(p), v, *root.Root, true); err != nil {
			return nil, "", err
		}
		if warning, err = g.Judge.Facts(ctx, names.KindProvider, p.String(), what(p), v, *root.Root); err != nil {
			return nil, "", err
		}
	}
	if need == 0 {
		return &source.ProviderRelease{ProviderRoot: root}, warning, nil
	}
	rel, err := g.Inner.ReadProvider(ctx, root, need)
	if err != nil {
		return nil, "", err
	}
	return g.platforms(rel), warning, nil
}

// ResolveProvider is the inner source's release v, when the policy allows
// the version and, when stored, its facts admit it (the attestation rule
// is judged when it is read).
func (g *Providers) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	return g.resolve(ctx, p, v, func() (*source.ProviderRoot, error) { return g.Inner.ResolveProvider(ctx, p, v, via) })
}

// ResolveHeldProvider is the release the inner source holds, judged as
// ResolveProvider judges it.
func (g *Providers) ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	return g.resolve(ctx, p, v, func() (*source.ProviderRoot, error) { return source.ResolveHeldProvider(ctx, g.Inner, p, v, via) })
}

// resolve is release v as inner resolves it, judged: the policy on the
// version before anything is read, the facts of a stored release after.
func (g *Providers) resolve(ctx context.Context, p names.Provider, v names.Version, inner func() (*source.ProviderRoot, error)) (*source.ProviderRoot, error) {
	if err := g.Judge.Version(names.KindProvider, p.String(), what(p), v); err != nil {
		return nil, err
	}
	root, err := inner()
	if err != nil {
		return nil, err
	}
	if root.Root != nil {
		if _, err := g.Judge.Facts(ctx, names.KindProvider, p.String(), what(p), v, *root.Root); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// ResolveProviderAt is the inner source's stored release an archive URL
// names, judged whole: the policy, the facts and the attestation rule.
func (g *Providers) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	if err := g.Judge.Version(names.KindProvider, p.String(), what(p), v); err != nil {
		return nil, err
	}
	root, err := g.Inner.ResolveProviderAt(ctx, p, v, index)
	if err != nil {
		return nil, err
	}
	if _, err := g.Judge.Facts(ctx, names.KindProvider, p.String(), what(p), v, *root.Root); err != nil {
		return nil, err
	}
	if err := g.Judge.Attested(ctx, names.KindProvider, what(p), v, *root.Root, true); err != nil {
		return nil, err
	}
	return root, nil
}

// ReadProvider reads the release and, for a stored one, its attestation
// verdict at once (its two round trips overlap the reads'); a refused
// release is refused whatever the reads found. Platforms the policy
// denies are left out, and said why in Refused.
func (g *Providers) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	var verdict error
	var wg sync.WaitGroup
	if r.Root != nil {
		wg.Go(func() {
			verdict = cache.Recover(func() error {
				return g.Judge.Attested(ctx, names.KindProvider, what(r.Provider), r.Version, *r.Root, true)
			})
		})
	}
	rel, err := g.Inner.ReadProvider(ctx, r, need)
	wg.Wait()
	if verdict != nil {
		return nil, verdict
	}
	if err != nil {
		return nil, err
	}
	return g.platforms(rel), nil
}

// platforms leaves out of rel the platforms the policy denies.
func (g *Providers) platforms(rel *source.ProviderRelease) *source.ProviderRelease {
	kept := rel.Platforms[:0:0]
	for _, pl := range rel.Platforms {
		if err := g.Judge.Platform(rel.Provider, rel.Version, pl); err != nil {
			if rel.Refused == nil {
				rel.Refused = map[names.Platform]error{}
			}
			rel.Refused[pl] = err // its package stays: a generated SHA256SUMS lists it
			continue
		}
		kept = append(kept, pl)
	}
	rel.Platforms = kept
	return rel
}

// OpenProviderPackage is the inner source's package, when the policy
// allows the platform.
func (g *Providers) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	if _, ok := r.Root.Index.Platforms[pl]; ok {
		if err := g.Judge.Platform(r.Provider, r.Version, pl); err != nil {
			return nil, err
		}
	}
	return g.Inner.OpenProviderPackage(ctx, r, pl)
}

// OpenPulledFile is a file named by a pull URL, decided before the
// engine is asked anything: under a rule that reads facts nothing is
// served from an origin directly, a version or platform the policy
// denies is not found; a file served from a release the registry holds
// is judged by the attestation rule.
func (g *Providers) OpenPulledFile(ctx context.Context, f source.PulledFile) (*source.Blob, error) {
	pf, ok := g.Inner.(source.PulledFiles)
	if !ok {
		return nil, source.NotFoundf("provider %s is not pulled through from any allowed origin", f.Provider)
	}
	addr := f.Provider.String()
	if g.Judge.PullsOnlyStored(names.KindProvider, addr) {
		return nil, source.NotFoundf("provider %s %s is served only from this proxy's registry, once the policy's min_age and signers allow it", f.Provider, f.Version)
	}
	if err := g.Judge.Version(names.KindProvider, addr, what(f.Provider), f.Version); err != nil {
		return nil, err
	}
	if f.File == source.FilePackage {
		if err := g.Judge.Platform(f.Provider, f.Version, f.Platform); err != nil {
			return nil, err
		}
	}
	blob, err := pf.OpenPulledFile(ctx, f)
	if err != nil || blob.From == nil {
		return blob, err
	}
	if err := g.Judge.Attested(ctx, names.KindProvider, what(f.Provider), f.Version, *blob.From, true); err != nil {
		return nil, err
	}
	return blob, nil
}

// WarmProvider is the inner source's, for a platform the policy allows
// (r was resolved through the gate).
func (g *Providers) WarmProvider(ctx context.Context, r *source.ProviderRoot, pl names.Platform) {
	w, ok := g.Inner.(source.Warmer)
	if !ok || g.Judge.Platform(r.Provider, r.Version, pl) != nil {
		return
	}
	w.WarmProvider(ctx, r, pl)
}
