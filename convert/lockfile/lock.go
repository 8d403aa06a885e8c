package lockfile

import (
	"context"
	"fmt"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// Options say where providers are, which platforms to lock and for which
// client.
type Options struct {
	Template  *repotemplate.Template
	Open      func(ctx context.Context, ref oci.Reference) (oci.ReadOnlyRepository, error)
	Platforms []names.Platform
	// Client decides how tags are listed (see listVersions) and the lock
	// file's header; the requirements' addresses already follow it.
	Client tfconfig.Client
	// NoDownload refuses to download zips whose h1 is not stored, instead of
	// computing it.
	NoDownload bool
	// Policy, when set, is the policy file: versions it denies (or
	// revokes) are not chosen (policy.go), as the proxy lists none of
	// them; a version it deprecates is locked with its message
	// (Provider.Deprecated), as the proxy warns clients of it.
	Policy *policy.Policy
}

// Lock chooses a version for each requirement as the client would (a
// locked version that still meets the constraints is kept, otherwise the
// newest acceptable one) and returns the lock file the client would write
// after installing every requested platform from a signed registry:
// the h1 of each requested platform's package, a zh for every line of the
// publisher's signed SHA256SUMS (or, for a release without one, for every
// package of the index), and the hashes of an earlier lock of the same
// version. Everything comes from registry metadata; a zip is downloaded
// only when its artifact lacks a trusted stored h1 (third-party
// artifacts). Providers of the existing lock that nothing requires any more
// are dropped, as tofu init drops them.
func Lock(ctx context.Context, reqs []tfconfig.Requirement, existing *File, opts Options) (*File, error) {
	if len(opts.Platforms) == 0 {
		return nil, fmt.Errorf("no platform to lock: give at least one os_arch")
	}
	out := &File{Client: opts.Client, Providers: make([]Provider, len(reqs))}
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

// lockOne locks one provider.
func lockOne(ctx context.Context, r tfconfig.Requirement, prev *Provider, opts Options) (*Provider, error) {
	ref, err := opts.Template.Expand(r.Addr.TemplateValues())
	if err != nil {
		return nil, err
	}
	repo, err := opts.Open(ctx, ref)
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, fmt.Errorf("no repository %s", ref)
		}
		return nil, err
	}
	v, tag, err := chooseVersion(ctx, repo, ref, r, prev, opts.Client, opts.Policy)
	if err != nil {
		return nil, err
	}
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil {
		return nil, fmt.Errorf("%s:%s: %w", ref, tag, err)
	}
	h, err := lockedHashes(ctx, repo, pv, opts)
	if err != nil {
		return nil, fmt.Errorf("%s %s%w", ref, v, err)
	}
	if prev != nil && prev.Version == v.String() {
		if err := checkPriorHashes(prev, h); err != nil {
			return nil, err
		}
		h.add(preferredHashes(prev.Hashes)...)
	}
	deprecated, _ := opts.Policy.Deprecation(names.KindProvider, policy.ProviderAddress(r.Addr), v)
	return &Provider{
		Address:     r.Addr.String(),
		Version:     v.String(),
		Constraints: names.ConstraintsString(r.Constraints),
		Hashes:      h.list(),
		Deprecated:  deprecated,
	}, nil
}

// Release is the provider block Lock writes for release pv of addr,
// read from repo and locked for opts.Platforms (opts.NoDownload as Lock
// takes it; the other options are not read), with constraints as the
// configuration states them ("" for none). It is what Lock writes when
// it chooses that version with no earlier lock of it.
func Release(ctx context.Context, repo oci.ReadOnlyRepository, addr names.Provider, pv *oci.ProviderVersion, constraints string, opts Options) (*Provider, error) {
	if len(opts.Platforms) == 0 {
		return nil, fmt.Errorf("no platform to lock: give at least one os_arch")
	}
	h, err := lockedHashes(ctx, repo, pv, opts)
	if err != nil {
		return nil, fmt.Errorf("%s %s%w", addr, pv.Version, err)
	}
	return &Provider{Address: addr.String(), Version: pv.Version.String(), Constraints: constraints, Hashes: h.list()}, nil
}

// lockedHashes are releaseHashes, once every platform of opts is known
// to have a package; its errors start with ": " or " has no package".
func lockedHashes(ctx context.Context, repo oci.ReadOnlyRepository, pv *oci.ProviderVersion, opts Options) (*hashSet, error) {
	for _, p := range opts.Platforms {
		if _, ok := pv.Platforms[p]; !ok {
			return nil, fmt.Errorf(" has no package for %s", p)
		}
	}
	h, err := releaseHashes(ctx, repo, pv, opts)
	if err != nil {
		return nil, fmt.Errorf(": %w", err)
	}
	return h, nil
}

// chooseVersion lists the repository as the client does and selects as
// tofu's installer does; it returns the version and the tag the client
// resolves for it.
func chooseVersion(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, r tfconfig.Requirement, prev *Provider, c tfconfig.Client, pol *policy.Policy) (names.Version, string, error) {
	tl, err := listVersions(ctx, repo, c)
	if err != nil {
		if oci.IsNotFound(err) {
			return names.Version{}, "", fmt.Errorf("no repository %s", ref)
		}
		return names.Version{}, "", fmt.Errorf("listing versions in %s: %w", ref, err)
	}
	var locked *names.Version
	if prev != nil {
		v, err := names.ParseVersionLoose(prev.Version)
		if err != nil {
			return names.Version{}, "", fmt.Errorf("lock file version %q: %w", prev.Version, err)
		}
		locked = &v
	}
	available, denied := allowedByPolicy(pol, r.Addr, tl.available) // policy.go
	if err := lockedDenied(locked, denied); err != nil {
		return names.Version{}, "", err
	}
	v, err := names.SelectVersion(available, r.Constraints, locked)
	if err != nil {
		return names.Version{}, "", fmt.Errorf("%s: %w", ref, withDenials(err, denied))
	}
	tag, err := tl.tagFor(v, ref.String())
	if err != nil {
		return names.Version{}, "", err
	}
	return v, tag, nil
}

// releaseHashes computes the hashes of a release: zh of every line of the
// publisher's signed SHA256SUMS (or of every package when unsigned), zh of
// every package of the index, and h1 of each requested platform.
func releaseHashes(ctx context.Context, repo oci.ReadOnlyRepository, pv *oci.ProviderVersion, opts Options) (*hashSet, error) {
	h := newHashSet()
	var prov *oci.Provenance
	var files *oci.ProvenanceFiles
	if pv.Provenance != nil {
		var err error
		if prov, files, err = oci.ReadProvenance(ctx, repo, *pv.Provenance); err != nil {
			return nil, err
		}
		sums, err := publisherSignedSums(prov, files)
		if err != nil {
			return nil, err
		}
		zhs, err := signedZipHashes(sums)
		if err != nil {
			return nil, err
		}
		h.add(zhs...)
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
			if !slices.Contains(opts.Platforms, p) {
				return nil
			}
			h1, err := platformH1(gctx, repo, prov, files, p, zip, opts.NoDownload)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			h.add(h1)
			return nil
		})
	}
	return h, g.Wait()
}

// platformH1 is a package's h1: the one stored with the release when it
// can be trusted, otherwise computed from the downloaded zip.
func platformH1(ctx context.Context, repo oci.ReadOnlyRepository, prov *oci.Provenance, files *oci.ProvenanceFiles, p names.Platform, zip ocispec.Descriptor, noDownload bool) (string, error) {
	if h1 := pkghash.TrustedH1(prov, files, p, zip); h1 != "" {
		return h1, nil
	}
	if noDownload {
		return "", fmt.Errorf("no stored h1 and downloads are disabled")
	}
	return pkghash.RemoteZipH1(ctx, repo, zip)
}

// checkPriorHashes refuses to extend an earlier lock of the same version
// whose hashes match none of the release's packages: tofu init would
// refuse that release ("doesn't match any of the checksums previously
// recorded"), and adding today's hashes would hide a changed release.
func checkPriorHashes(prev *Provider, h *hashSet) error {
	prior := preferredHashes(prev.Hashes)
	if len(prior) == 0 {
		return nil
	}
	for _, x := range prior {
		if h.has(x) {
			return nil
		}
	}
	return fmt.Errorf("the lock file's hashes for %s %s match none of the packages in the registry: the release changed since it was locked, and tofu init would refuse it; check the release, then remove the entry to lock it afresh", prev.Address, prev.Version)
}
