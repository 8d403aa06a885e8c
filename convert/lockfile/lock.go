package lockfile

import (
	"context"
	"fmt"
	"sync"

	"github.com/apparentlymart/go-versions/versions"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Options say where providers are and which platforms to lock.
type Options struct {
	Template  *oci.Template
	Open      func(ctx context.Context, ref oci.Reference) (oci.ReadOnlyRepository, error)
	Platforms []names.Platform
	// NoDownload refuses to download zips whose h1 is not stored, instead of
	// computing it.
	NoDownload bool
}

// Lock chooses a version for each requirement as OpenTofu would (keeping a
// locked version that still meets the constraints) and returns lock entries
// holding h1 for every requested platform and zh for every package of the
// release. Everything comes from registry metadata; a zip is downloaded
// only when its artifact lacks a stored h1 (third-party artifacts).
func Lock(ctx context.Context, reqs []tfconfig.Requirement, existing *File, opts Options) (*File, error) {
	if len(opts.Platforms) == 0 {
		return nil, fmt.Errorf("no platform to lock: give at least one os_arch")
	}
	out := &File{Providers: make([]Provider, len(reqs))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, r := range reqs {
		g.Go(func() error {
			var prev *Provider
			if existing != nil {
				prev = existing.Provider(r.Addr.String())
			}
			lp, err := lockOne(gctx, r, prev, opts)
			if err != nil {
				return fmt.Errorf("%s: %w", r.Addr, err)
			}
			out.Providers[i] = *lp
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func lockOne(ctx context.Context, r tfconfig.Requirement, prev *Provider, opts Options) (*Provider, error) {
	ref, err := opts.Template.Expand(r.Addr.TemplateValues())
	if err != nil {
		return nil, err
	}
	repo, err := opts.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	available, err := oci.ListVersions(ctx, repo)
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, fmt.Errorf("no repository %s", ref)
		}
		return nil, fmt.Errorf("listing versions in %s: %w", ref, err)
	}
	var locked *versions.Version
	if prev != nil {
		v, err := names.ParseVersionLoose(prev.Version)
		if err != nil {
			return nil, fmt.Errorf("lock file version %q: %w", prev.Version, err)
		}
		locked = &v
	}
	v, err := names.SelectVersion(available, r.Constraints, locked)
	if err != nil {
		return nil, err
	}
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", ref, v, err)
	}
	h := newHashSet()
	if prev != nil && prev.Version == v.String() {
		h.add(prev.Hashes...)
	}
	var prov *oci.Provenance
	var files *oci.ProvenanceFiles
	if pv.Provenance != nil {
		if prov, files, err = oci.ReadProvenance(ctx, repo, *pv.Provenance); err != nil {
			return nil, err
		}
		// zh of every package the signed SHA256SUMS lists, as tofu records
		// when installing from a signed registry.
		if files.SHA256SUMS.Data != nil {
			sums, err := sha256sums.Parse(files.SHA256SUMS.Data)
			if err != nil {
				return nil, err
			}
			for name, sum := range sums {
				if f, err := names.ParseProviderFilename(name); err == nil && f.Kind == names.ProviderZip && f.Version == v.String() {
					h.add(pkghash.ZH(sum))
				}
			}
		}
	}
	for _, p := range opts.Platforms {
		if _, ok := pv.Platforms[p]; !ok {
			return nil, fmt.Errorf("%s %s has no package for %s", ref, v, p)
		}
	}
	// zh for every platform in the index, and h1 for the requested ones.
	wanted := map[names.Platform]bool{}
	for _, p := range opts.Platforms {
		wanted[p] = true
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for p, md := range pv.Platforms {
		g.Go(func() error {
			zip, err := oci.ReadProviderPackage(gctx, repo, md)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			h.add(pkghash.ZH(zip.Digest.Encoded()))
			if !wanted[p] {
				return nil
			}
			if h1 := pkghash.TrustedH1(prov, files, p, zip); h1 != "" {
				h.add(h1)
				return nil
			}
			if opts.NoDownload {
				return fmt.Errorf("%s: no stored h1 and downloads are disabled", p)
			}
			h1, err := pkghash.RemoteZipH1(gctx, repo, zip)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			h.add(h1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &Provider{
		Address:     r.Addr.String(),
		Version:     v.String(),
		Constraints: names.ConstraintsString(r.Constraints),
		Hashes:      h.list(),
	}, nil
}

type hashSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func newHashSet() *hashSet { return &hashSet{m: map[string]bool{}} }

func (h *hashSet) add(hs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range hs {
		h.m[x] = true
	}
}

func (h *hashSet) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.m))
	for x := range h.m {
		out = append(out, x)
	}
	return sortedUnique(out)
}
