// Package ingest copies releases from their origins into OCI repositories,
// verified as OpenTofu verifies them: provider releases from origin
// registries (the Provider Registry Protocol) and OpenTofu releases from a
// TofuDL API. It is the use case behind `oci-tofu mirror`.
package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/apparentlymart/go-versions/versions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// ProviderOptions configure Providers.
type ProviderOptions struct {
	Template *repotemplate.Template
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
	// EnforceGPGExpiration refuses releases whose signature verifies only
	// with an expired key, subkey or signature.
	EnforceGPGExpiration bool
	// Attest, when set, signs and attests each release pushed; a release
	// found complete that its key has not attested is verified from its
	// origin again (downloaded, pushed: up to date) and then attested.
	Attest *Attestation
	// Gate, when set, is asked about each version before anything of it
	// is downloaded (gate.go).
	Gate Gate
}

// Result is the outcome for one provider version (or for a provider as a
// whole when Version is empty and Err is set).
type Result struct {
	Provider string `json:"provider,omitempty"`
	// Module is set instead of Provider for a module (HOST/NS/NAME/SYSTEM).
	Module    string `json:"module,omitempty"`
	Version   string `json:"version,omitempty"`
	Reference string `json:"reference,omitempty"`
	Digest    string `json:"digest,omitempty"`
	Skipped   bool   `json:"skipped,omitempty"`
	// Attested is set when the release was signed and attested now.
	Attested bool   `json:"attested,omitempty"`
	Error    string `json:"error,omitempty"`
	// Denied is why the Gate left a version chosen by the constraints out
	// (nothing of it was downloaded).
	Denied string `json:"denied,omitempty"`
	// Warnings are what OpenTofu would print installing the release: an
	// expired signing key, a SHA256SUMS it does not take as signed.
	Warnings []string `json:"warnings,omitempty"`
	// SBOMs say, by platform, what became of each platform's SBOM when
	// the release was pushed (release.SBOMStatus, and why for a platform
	// left without one); none for a version found complete.
	SBOMs map[string]string `json:"sboms,omitempty"`
}

// SBOMNotes are SBOM results as Result.SBOMs reports them.
func SBOMNotes(results []release.SBOMResult) map[string]string {
	if len(results) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, r := range results {
		out[r.Platform.String()] = string(r.Status)
		if r.Err != nil {
			out[r.Platform.String()] += ": " + r.Err.Error()
		}
	}
	return out
}

// Providers copies provider releases from their origin registries into OCI:
// for each spec, every version meeting its constraints (or the locked
// version), each platform's zip, SHA256SUMS and signature, verified against
// the registry's signing keys exactly as `tofu init` verifies them, then
// pushed with the packer, provenance included. Versions already complete in
// the target are skipped without downloading. A failure is reported in its
// result and does not stop the other providers.
func Providers(ctx context.Context, c *origin.Client, specs []names.ProviderSpec, opts ProviderOptions) []Result {
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
			rs := ingestProvider(ctx, c, spec, opts)
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

// chooseProviderVersions reads the origin's listing and picks the
// versions spec's constraints (or the lock's entry, returned) select.
func chooseProviderVersions(spec names.ProviderSpec, listed []*wire.RegistryVersion, lock *lockfile.File) (map[string]*wire.RegistryVersion, versions.List, *lockfile.Provider, error) {
	addr := spec.Provider.String()
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
	if lock == nil {
		chosen := names.MatchingVersions(available, spec.Constraints)
		if len(chosen) == 0 {
			return nil, nil, nil, fmt.Errorf("no version matches %q", names.ConstraintsString(spec.Constraints))
		}
		return byVersion, chosen, nil, nil
	}
	locked := lock.Provider(addr)
	if locked == nil {
		return nil, nil, nil, fmt.Errorf("the lock file has no entry for %s", addr)
	}
	v, err := names.ParseVersionLoose(locked.Version)
	if err != nil || byVersion[v.String()] == nil {
		return nil, nil, nil, fmt.Errorf("locked version %s is not offered by %s", locked.Version, spec.Provider.Hostname)
	}
	return byVersion, versions.List{v}, locked, nil
}

func ingestProvider(ctx context.Context, c *origin.Client, spec names.ProviderSpec, opts ProviderOptions) []Result {
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
	byVersion, chosen, locked, err := chooseProviderVersions(spec, listed, opts.Lock)
	if err != nil {
		return fail(err)
	}
	paddr := policy.ProviderAddress(spec.Provider)
	chosen, results, err := opts.Gate.split(names.KindProvider, paddr, addr, chosen, locked != nil)
	if err != nil {
		return fail(err)
	}
	for _, v := range chosen {
		r := Result{Provider: addr, Version: v.String(), Warnings: opts.Gate.warnings(names.KindProvider, paddr, v)}
		res, warnings, attested, err := ingestVersion(ctx, c, spec.Provider, byVersion[v.String()], repo, ref, locked, opts, &r)
		r.Warnings, r.Attested = append(r.Warnings, warnings...), attested
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

// ingestVersion mirrors one version, returning what was pushed, the
// warnings OpenTofu would give about its signature, and whether it was
// attested; r.SBOMs says what became of the SBOMs.
func ingestVersion(ctx context.Context, c *origin.Client, addr names.Provider, v *wire.RegistryVersion, repo oci.Repository, ref oci.Reference, locked *lockfile.Provider, opts ProviderOptions, r *Result) (oci.PushResult, []string, bool, error) {
	platforms, err := offeredPlatforms(v, opts.Platforms)
	if err != nil {
		return oci.PushResult{}, nil, false, err
	}
	version, _ := names.ParseVersionLoose(v.Version)
	if done, ok := complete(ctx, repo, version, platforms); ok && (opts.Attest == nil || opts.Attest.Attested(ctx, repo, done.Digest, release.ProviderPredicateType)) {
		// What the stored signature gives now: a key may have expired since.
		warnings, err := release.StoredWarnings(ctx, repo, done)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("could not re-read the stored signature for warnings: %v", err))
		}
		return oci.PushResult{Root: done, UpToDate: true}, warnings, false, nil
	}
	// SHA256SUMS, its signature and the registry's keys first, as tofu
	// checks them; then the packages, each against the signed SHA256SUMS.
	rel, err := ResolveProviderRelease(ctx, c, addr, v, ResolveOptions{Platforms: platforms, Concurrency: opts.Concurrency, EnforceGPGExpiration: opts.EnforceGPGExpiration})
	if err != nil {
		return oci.PushResult{}, nil, false, err
	}
	res, err := pushRelease(ctx, c, rel, repo, ref, locked, opts)
	r.SBOMs = SBOMNotes(rel.SBOMs)
	warnings := rel.Warnings
	if rel.IndexNote != "" {
		warnings = append(slices.Clip(warnings), rel.IndexNote)
	}
	return res, warnings, err == nil && opts.Attest != nil, err
}

// pushRelease downloads a resolved release's packages, each checked
// against the signed SHA256SUMS, pushes it and, with opts.Attest,
// attests it.
func pushRelease(ctx context.Context, c *origin.Client, rel *ProviderOriginRelease, repo oci.Repository, ref oci.Reference, locked *lockfile.Provider, opts ProviderOptions) (oci.PushResult, error) {
	if locked != nil {
		for _, p := range rel.Platforms {
			if !slices.Contains(locked.Hashes, pkghash.ZH(rel.ZipSHA256(p))) {
				return oci.PushResult{}, fmt.Errorf("%s: zh:%s is not in the lock file", p, rel.ZipSHA256(p))
			}
		}
	}
	return stageAndPush(ctx, opts.Concurrency, stagedRelease[names.Platform]{
		writeChecksums: rel.WriteChecksums,
		files:          rel.Platforms,
		fetch: func(ctx context.Context, p names.Platform, dir string) error {
			return rel.DownloadZip(ctx, c, p, dir, opts.MaxZipSize)
		},
		push: func(dir string) (oci.PushResult, error) {
			return rel.PushDirAttested(ctx, dir, repo, ref.Name(), oci.PushOptions{}, opts.Attest)
		},
	})
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
