package held

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Providers is the source of the provider releases the repositories of
// its mappings hold, a provider in the first mapping covering it:
// versions from tags, releases from their indexes, platform manifests and
// provenance.
type Providers struct {
	Store    *store.Store
	Mappings store.ProviderMappings
	Log      *slog.Logger
}

var _ source.Providers = (*Providers)(nil)

// Repo is the repository p maps to.
func (h *Providers) Repo(p names.Provider) (*store.Repo, error) {
	ref, err := h.Mappings.Map(p)
	var se *store.Error
	if errors.Is(err, store.ErrNoRepository) && errors.As(err, &se) {
		return nil, source.NotFoundf("provider %s: %v", p, se.Err)
	}
	if err != nil {
		return nil, source.Missing(err, "provider "+p.String(), "provider %s is not served by this proxy (see its include and exclude filters)", p)
	}
	return h.Store.Repo(ref), nil
}

// Covers reports whether the mapping's filters cover p.
func (h *Providers) Covers(p names.Provider) bool {
	_, err := h.Mappings.Map(p)
	return err == nil
}

// ProviderVersions lists the versions p's repository's tags name; a
// provider without any is not found. With a need, the indexes of the
// versions opts.Want wants are read while the tag list's later pages are
// (one round trip each at the registry's distance); the versions
// themselves are read by whoever asked (the gate).
func (h *Providers) ProviderVersions(ctx context.Context, p names.Provider, _ names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	repo, err := h.Repo(p)
	if err != nil {
		return source.ProviderListing{}, err
	}
	if opts.Need == 0 {
		return h.listing(ctx, p, repo, nil)
	}
	pf := h.Store.Prefetch(ctx, func(ctx context.Context, v names.Version) error {
		_, err := repo.ProviderVersion(ctx, v)
		return KeepFatal(err)
	})
	defer pf.Stop()
	early := pf.Add
	var hs *hints
	if opts.Hinted && opts.Need == source.NeedSummary {
		hs = readHints(ctx, repo, pf.Add)
		defer hs.wait()
		early = hs.early
	}
	l, err := h.listing(ctx, p, repo, func(v names.Version) {
		if opts.Want == nil || opts.Want(v) {
			early(v)
		}
	})
	if err != nil {
		return l, err
	}
	if hs != nil {
		hs.wait()
		l.Releases = hs.releases(p, l)
	}
	if err := pf.Failed(); err != nil { // what the listing's fan-out would stop at
		return l, err
	}
	return l, nil
}

func (h *Providers) listing(ctx context.Context, p names.Provider, repo *store.Repo, early func(names.Version)) (source.ProviderListing, error) {
	l, err := repo.VersionsEarly(ctx, early)
	out := source.ProviderListing{Listing: source.Listing{At: l.At}, Unresolvable: l.Unresolvable, Refused: l.Refused}
	if err != nil {
		return out, source.Missing(err, "provider "+p.String(), "unknown provider %s", p)
	}
	if len(l.Versions) == 0 {
		return out, source.NotFoundf("provider %s has no versions (no tag of its repository is a version)", p)
	}
	for _, v := range l.Versions {
		out.Versions = append(out.Versions, source.Listed{Version: v, Stored: true})
	}
	return out, nil
}

// KeepFatal passes on errors that must fail a whole listing (the
// registry failing, not one version's artifact).
func KeepFatal(err error) error {
	if store.Skippable(err) {
		return nil
	}
	return err
}

// ResolveProvider reads the index version v's tag names (and, when it is
// not cached, the repository's version index beside it, whose hints make
// the provenance's read one round trip): NotFound, marked ErrNotHeld,
// when the registry does not hold it.
func (h *Providers) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, _ names.Via) (*source.ProviderRoot, error) {
	repo, err := h.Repo(p)
	if err != nil {
		return nil, source.MarkNotHeld(err)
	}
	pv, err := repo.ProviderVersionHinted(ctx, v)
	if err != nil {
		return nil, source.MarkNotHeld(source.Missing(err, "provider "+p.String(), "provider %s has no version %s (OpenTofu resolves the tag %s)", p, v, names.TagForVersion(v)))
	}
	return &source.ProviderRoot{Provider: p, Version: v, Root: &source.Root{Repo: repo, Digest: pv.Index.Digest, Index: pv}}, nil
}

// ResolveProviderAt reads the index with digest index, when version v's
// tag names it: the exact content an archive URL's metadata described.
func (h *Providers) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	repo, err := h.Repo(p)
	if err != nil {
		return nil, err
	}
	pv, err := repo.ProviderVersionAt(ctx, v, index)
	if err != nil {
		return nil, source.Missing(err, "provider "+p.String(), "provider %s has no release with index %s", p, index)
	}
	return &source.ProviderRoot{Provider: p, Version: v, Root: &source.Root{Repo: repo, Digest: index, Index: pv}}, nil
}

// ReadProvider reads what need names of a stored release, at once: its
// summary or provenance (one or two round trips) and its platform
// manifests (one). A provenance the registry holds but cannot serve
// intact (corrupt, invalid, missing) costs only what needs it — stored
// h1 hashes, the publisher's SHA256SUMS and signature —, not the
// packages, which are served by their digests.
func (h *Providers) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	repo, pv := r.Root.Repo, r.Root.Index
	rel := &source.ProviderRelease{ProviderRoot: r, Platforms: pv.SortedPlatforms()}
	var prov *store.Provenance
	var reads []func(context.Context) error
	if need&(source.NeedPackages|source.NeedChecksums) != 0 {
		reads = append(reads, func(ctx context.Context) (err error) {
			prov, err = h.provenance(ctx, rel)
			return err
		})
	} else if need&source.NeedSummary != 0 {
		reads = append(reads, func(ctx context.Context) error {
			sum, known, err := repo.Summary(ctx, pv)
			rel.Protocols, rel.SigningKeyIDs, rel.Summarized = sum.Protocols, sum.SigningKeyIDs, known
			return err
		})
	}
	if need&source.NeedPackages != 0 {
		reads = append(reads, func(ctx context.Context) error {
			zips, err := repo.Zips(ctx, pv)
			if err != nil {
				return err
			}
			rel.Packages = make(map[names.Platform]*source.ProviderPackage, len(zips))
			for pl, z := range zips {
				rel.Packages[pl] = &source.ProviderPackage{Filename: names.ProviderZipName(r.Provider.Type, r.Version.String(), pl), Layer: z, Release: rel}
			}
			return nil
		})
	}
	if err := h.Store.Each(ctx, len(reads), func(ctx context.Context, i int) error { return reads[i](ctx) }); err != nil {
		return nil, err
	}
	if prov != nil {
		if err := typeAgrees(r, prov); err != nil {
			return nil, err
		}
		rel.Protocols, rel.Summarized = prov.Meta.Protocols, true
		if prov.Files.Signature.Data != nil && prov.Files.Keys.Data != nil {
			rel.SigningKeyIDs = prov.Meta.SigningKeyIDs
		}
		rel.Checksums = publisherChecksums(prov)
	}
	for pl, pkg := range rel.Packages {
		pkg.Hashes = hashes(prov, pl, pkg)
	}
	return rel, nil
}

// provenance reads a release's provenance: nil when it has none, or
// when it cannot be read intact (rel.ChecksumsErr says why).
func (h *Providers) provenance(ctx context.Context, rel *source.ProviderRelease) (*store.Provenance, error) {
	prov, err := rel.Root.Repo.Provenance(ctx, rel.Root.Index)
	if err == nil {
		return prov, nil
	}
	switch store.FailureOf(err) {
	case oci.FailureCorrupt, oci.FailureInvalid, oci.FailureNotFound:
		h.Log.Warn("a provider release's provenance cannot be read; serving its packages by digest alone",
			"provider", rel.Provider.String(), "version", rel.Version.String(), "index", rel.Root.Digest.String(), "error", err.Error())
		rel.ChecksumsErr = err
		return nil, nil
	}
	return nil, err
}

// typeAgrees refuses a release whose provenance names another provider
// type than the address it is served under (the template mapped the
// address to a repository holding another provider): tofu would install
// its packages and then find no terraform-provider-<type> executable.
func typeAgrees(r *source.ProviderRoot, prov *store.Provenance) error {
	if prov.Meta == nil {
		return nil
	}
	typ := prov.Meta.Type
	if typ == "" || strings.EqualFold(typ, r.Provider.Type) {
		return nil
	}
	what := fmt.Sprintf("the release mapped to %s is of provider type %s, not %s: tofu would find no %s%s executable in it", r.Provider, typ, r.Provider.Type, names.ProviderFilePrefix, r.Provider.Type)
	return &store.Error{Failure: oci.FailureInvalid, Repo: r.Root.Repo.Name(), What: what, Err: errors.New(what)}
}

// hashes are a package's lock-file hashes: its trusted h1
// (pkghash.TrustedH1), if any, and zh.
func hashes(prov *store.Provenance, pl names.Platform, pkg *source.ProviderPackage) []string {
	var out []string
	if prov != nil {
		if h1 := pkghash.TrustedH1(prov.Meta, prov.Files, pl, pkg.Layer); h1 != "" {
			out = append(out, h1)
		}
	}
	return append(out, pkghash.ZH(pkg.Layer.Digest.Encoded()))
}

// publisherChecksums are the publisher's SHA256SUMS, signature and keys,
// verified when the release was pushed; nil when it carries none.
func publisherChecksums(prov *store.Provenance) *source.Checksums {
	f := prov.Files
	if f.SHA256SUMS.Data == nil || f.Signature.Data == nil || f.Keys.Data == nil || len(prov.Meta.SigningKeyIDs) == 0 {
		return nil
	}
	cs := &source.Checksums{Data: f.SHA256SUMS.Data, Signature: f.Signature.Data,
		Keys: []wire.GPGPublicKey{{KeyID: prov.Meta.SigningKeyIDs[0], ASCIIArmor: string(f.Keys.Data)}}, Filenames: map[names.Platform]string{}}
	for name, pp := range prov.Meta.Platforms {
		if pl, err := names.ParsePlatform(name); err == nil && pp.Filename != "" {
			cs.Filenames[pl] = pp.Filename
		}
	}
	return cs
}

// OpenProviderPackage is the zip of platform pl of a stored release.
func (h *Providers) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	m, ok := r.Root.Index.Platforms[pl]
	if !ok {
		return nil, source.NotFoundf("provider %s %s has no package for %s", r.Provider, r.Version, pl)
	}
	zip, err := r.Root.Repo.PlatformZip(ctx, m)
	if err != nil {
		return nil, err
	}
	return &source.Blob{Name: names.ProviderZipName(r.Provider.Type, r.Version.String(), pl), ContentType: "application/zip", Pinned: true, Repo: r.Root.Repo, Layer: zip}, nil
}
