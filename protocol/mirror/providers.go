// Package mirror copies releases from their origins into OCI repositories,
// verified as OpenTofu verifies them: provider releases from origin
// registries (the Provider Registry Protocol) and OpenTofu releases from a
// TofuDL API. It is the use case behind `oci-tofu mirror`.
package mirror

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apparentlymart/go-versions/versions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// MirrorOptions configure Mirror.
type MirrorOptions struct {
	Template *oci.Template
	Open     func(ref oci.Reference) (oci.Repository, error)
	// Platforms to mirror; empty means every platform the registry lists.
	Platforms []names.Platform
	// Lock, when set, selects exactly the locked versions and refuses any
	// zip whose zh: hash the lock does not list.
	Lock *lockfile.File
	// Concurrency bounds parallel downloads per version (default 4).
	Concurrency int
	// MaxZipSize bounds each download (default oci.MaxPackageSize).
	MaxZipSize int64
	// Log reports progress lines.
	Log func(format string, args ...any)
}

// Result is the outcome for one provider version (or for a provider as a
// whole when Version is empty and Err is set).
type Result struct {
	Provider  string `json:"provider"`
	Version   string `json:"version,omitempty"`
	Reference string `json:"reference,omitempty"`
	Digest    string `json:"digest,omitempty"`
	Skipped   bool   `json:"skipped,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Mirror copies provider releases from their origin registries into OCI:
// for each spec, every version meeting its constraints (or the locked
// version), each platform's zip, SHA256SUMS and signature, verified against
// the registry's signing keys exactly as `tofu init` verifies them, then
// pushed with the packer, provenance included. Versions already complete in
// the target are skipped without downloading. A failure is reported in its
// result and does not stop the other providers.
func Mirror(ctx context.Context, c *origin.Client, specs []names.ProviderSpec, opts MirrorOptions) []Result {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.MaxZipSize <= 0 {
		opts.MaxZipSize = oci.MaxPackageSize
	}
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	var mu sync.Mutex
	var results []Result
	var g errgroup.Group
	g.SetLimit(2)
	for _, spec := range specs {
		g.Go(func() error {
			rs := mirrorProvider(ctx, c, spec, opts)
			mu.Lock()
			results = append(results, rs...)
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	slices.SortFunc(results, func(a, b Result) int { return strings.Compare(a.Provider+" "+a.Version, b.Provider+" "+b.Version) })
	return results
}

func mirrorProvider(ctx context.Context, c *origin.Client, spec names.ProviderSpec, opts MirrorOptions) []Result {
	addr := spec.Provider.String()
	fail := func(err error) []Result { return []Result{{Provider: addr, Error: err.Error()}} }
	ref, err := opts.Template.Expand(spec.Provider.TemplateValues())
	if err != nil {
		return fail(err)
	}
	repo, err := opts.Open(ref)
	if err != nil {
		return fail(err)
	}
	listed, err := c.Versions(ctx, spec.Provider)
	if err != nil {
		return fail(err)
	}
	byVersion := map[string]*wire.RegistryVersion{}
	var available versions.List
	for _, v := range listed {
		pv, err := names.ParseVersionLoose(v.Version)
		if err != nil {
			continue
		}
		byVersion[pv.String()] = v
		available = append(available, pv)
	}
	var chosen versions.List
	var locked *lockfile.Provider
	if opts.Lock != nil {
		if locked = opts.Lock.Provider(addr); locked == nil {
			return fail(fmt.Errorf("the lock file has no entry for %s", addr))
		}
		v, err := names.ParseVersionLoose(locked.Version)
		if err != nil || byVersion[v.String()] == nil {
			return fail(fmt.Errorf("locked version %s is not offered by %s", locked.Version, spec.Provider.Hostname))
		}
		chosen = versions.List{v}
	} else {
		chosen = names.MatchingVersions(available, spec.Constraints)
	}
	if len(chosen) == 0 {
		return fail(fmt.Errorf("no version matches %q", names.ConstraintsString(spec.Constraints)))
	}
	var results []Result
	for _, v := range chosen {
		r := Result{Provider: addr, Version: v.String()}
		res, err := mirrorVersion(ctx, c, spec.Provider, byVersion[v.String()], repo, locked, opts)
		if err != nil {
			r.Error = err.Error()
			opts.Log("%s %s: %v", addr, v, err)
		} else {
			r.Reference, r.Digest, r.Skipped = ref.WithReference(names.TagForVersion(v)).String(), res.Root.Digest.String(), res.UpToDate
			opts.Log("%s %s → %s", addr, v, map[bool]string{true: "already complete", false: r.Reference}[res.UpToDate])
		}
		results = append(results, r)
	}
	return results
}

func mirrorVersion(ctx context.Context, c *origin.Client, addr names.Provider, v *wire.RegistryVersion, repo oci.Repository, locked *lockfile.Provider, opts MirrorOptions) (oci.PushResult, error) {
	platforms := opts.Platforms
	if len(platforms) == 0 {
		for _, p := range v.Platforms {
			pl, err := names.ParsePlatform(p.OS + "_" + p.Arch)
			if err != nil {
				return oci.PushResult{}, fmt.Errorf("registry lists %w", err)
			}
			platforms = append(platforms, pl)
		}
	}
	for _, p := range platforms {
		if !slices.Contains(v.Platforms, wire.RegistryPlatform{OS: p.OS, Arch: p.Arch}) {
			return oci.PushResult{}, fmt.Errorf("the registry offers no %s package", p)
		}
	}
	version, _ := names.ParseVersionLoose(v.Version)
	if done, ok := complete(ctx, repo, version, platforms); ok {
		return oci.PushResult{Root: done, UpToDate: true}, nil
	}

	dir, err := os.MkdirTemp("", "oci-tofu-mirror-")
	if err != nil {
		return oci.PushResult{}, err
	}
	defer os.RemoveAll(dir)
	downloads := make([]*origin.Download, len(platforms))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i, p := range platforms {
		g.Go(func() error {
			d, err := c.Download(gctx, addr, version.String(), p)
			if err != nil {
				return err
			}
			downloads[i] = d
			want := fmt.Sprintf("terraform-provider-%s_%s_%s.zip", addr.Type, version, p)
			if d.Filename != want {
				return fmt.Errorf("%s: package named %q, want %q", p, d.Filename, want)
			}
			if locked != nil && !slices.Contains(locked.Hashes, pkghash.ZH(strings.ToLower(d.SHASum))) {
				return fmt.Errorf("%s: zh:%s is not in the lock file", p, d.SHASum)
			}
			u, err := d.Resolve(d.DownloadURL)
			if err != nil {
				return err
			}
			return c.FetchTo(gctx, u, addr.Hostname, opts.MaxZipSize, filepath.Join(dir, d.Filename), d.SHASum)
		})
	}
	if err := g.Wait(); err != nil {
		return oci.PushResult{}, err
	}

	// SHA256SUMS, its signature and the registry's keys, as tofu checks them.
	first := downloads[0]
	for _, d := range downloads[1:] {
		if d.SHASumsURL != first.SHASumsURL || d.SHASumsSignatureURL != first.SHASumsSignatureURL {
			return oci.PushResult{}, fmt.Errorf("platforms disagree on the SHA256SUMS location")
		}
	}
	sumsName := fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS", addr.Type, version)
	for file, ref := range map[string]string{sumsName: first.SHASumsURL, sumsName + ".sig": first.SHASumsSignatureURL} {
		u, err := first.Resolve(ref)
		if err != nil {
			return oci.PushResult{}, err
		}
		if err := c.FetchTo(ctx, u, addr.Hostname, 1<<20, filepath.Join(dir, file), ""); err != nil {
			return oci.PushResult{}, err
		}
	}
	var keys []*pgp.Keyring
	for i, k := range first.SigningKeys.GPGPublicKeys {
		kr, err := pgp.ReadKeyring(fmt.Sprintf("%s signing key %d", addr.Hostname, i+1), []byte(k.ASCIIArmor))
		if err != nil {
			return oci.PushResult{}, err
		}
		keys = append(keys, kr)
	}
	if len(keys) == 0 {
		return oci.PushResult{}, fmt.Errorf("the registry lists no signing key")
	}
	rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys, Platforms: platforms})
	if err != nil {
		return oci.PushResult{}, err
	}
	if len(rel.Protocols) == 0 {
		rel.Protocols = first.Protocols
	}
	return rel.Push(ctx, repo, false, oci.PushOptions{})
}

// complete reports whether the target already holds the version with every
// platform and its provenance.
func complete(ctx context.Context, repo oci.Repository, v versions.Version, platforms []names.Platform) (ocispec.Descriptor, bool) {
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil || pv.Provenance == nil {
		return ocispec.Descriptor{}, false
	}
	for _, p := range platforms {
		if _, ok := pv.Platforms[p]; !ok {
			return ocispec.Descriptor{}, false
		}
	}
	return pv.Index, true
}
