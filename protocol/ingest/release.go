package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// ErrVerification marks an origin release that fails verification: a
// signature that does not verify against the registry's keys, a SHA256SUMS
// that does not list a package with the digest the registry names, a
// package whose bytes do not match. It is what a tampered origin looks like,
// as opposed to one that cannot be reached.
var ErrVerification = errors.New("origin release failed verification")

func verificationError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrVerification, fmt.Sprintf(format, args...))
}

// ProviderOriginRelease is one provider version as its origin registry
// offers it (source.ProviderRelease is what a source read of a release,
// held or not), its SHA256SUMS signature already verified against the registry's signing
// keys (convert/pgp, the rules `push provider` applies) and every platform's
// package checked to be listed there with the digest the registry names.
// The packages themselves come next (FetchZip, or DownloadZip into a
// release directory), and PushDir turns the directory into the artifact:
// the one path from an origin release to a verified artifact, shared by
// `oci-tofu mirror` and the proxy's pull-through.
type ProviderOriginRelease struct {
	// Provider is the address at the origin; Version its canonical string.
	Provider names.Provider
	Version  string
	// Platforms are the packages the release is made of, sorted.
	Platforms []names.Platform
	// Downloads are the registry's download answers, by platform.
	Downloads map[names.Platform]*origin.Download
	// Protocols are the plugin protocols the registry names.
	Protocols []string
	// SHA256SUMS and Signature are the bytes the registry served; Sums
	// are the packages' digests as OpenTofu reads them from SHA256SUMS.
	SHA256SUMS, Signature []byte
	Sums                  sha256sums.Sums
	// Keys are the registry's signing keys; KeyID the one that verified.
	Keys  []*pgp.Keyring
	KeyID string
	// Warnings are what OpenTofu would print accepting the signature.
	Warnings []string
	// SBOMs are what the last PushDir or PushDirAttested did about the
	// platforms' SBOMs (release.Provider.SBOMs).
	SBOMs []release.SBOMResult
	// IndexNote is the last push's warning about the repository's
	// version index (release.Provider.VersionIndexNote): "" when it was
	// updated or needed nothing.
	IndexNote string
	// policy judges the signature (expiry enforced or not).
	policy pgp.Policy
}

// ResolveOptions say which packages of a release to resolve and how its
// signature is judged.
type ResolveOptions struct {
	// Platforms, when not empty, selects the packages; each must be offered.
	Platforms []names.Platform
	// Concurrency bounds the download answers asked for at once.
	Concurrency int
	// EnforceGPGExpiration refuses signatures that verify only with an
	// expired key, subkey or signature (OPENTOFU_ENFORCE_GPG_EXPIRATION).
	EnforceGPGExpiration bool
}

// ResolveProviderRelease asks the origin where every platform's package
// of version v is (at most concurrency requests at once), then fetches
// SHA256SUMS and its signature and verifies them, before any package is
// downloaded. platforms, when not empty, selects the packages; each must
// be offered.
func ResolveProviderRelease(ctx context.Context, c *origin.Client, addr names.Provider, v *wire.RegistryVersion, opts ResolveOptions) (*ProviderOriginRelease, error) {
	version, err := names.ParseVersion(v.Version)
	if err != nil {
		return nil, fmt.Errorf("the registry lists version %q: %w", v.Version, err)
	}
	platforms, err := offeredPlatforms(v, opts.Platforms)
	if err != nil {
		return nil, err
	}
	rel := &ProviderOriginRelease{Provider: addr, Version: version.String(), Platforms: platforms, Downloads: map[names.Platform]*origin.Download{},
		policy: pgp.Policy{EnforceExpiration: opts.EnforceGPGExpiration}}
	if err := rel.askDownloads(ctx, c, max(opts.Concurrency, 1)); err != nil {
		return nil, err
	}
	if err := rel.fetchChecksums(ctx, c); err != nil {
		return nil, err
	}
	if err := rel.verify(); err != nil {
		return nil, err
	}
	return rel, nil
}

// offeredPlatforms are the platforms asked for (all the registry lists
// when none), each offered, sorted.
func offeredPlatforms(v *wire.RegistryVersion, want []names.Platform) ([]names.Platform, error) {
	var out []names.Platform
	if len(want) == 0 {
		for _, p := range v.Platforms {
			pl, err := names.ParsePlatform(p.OS + "_" + p.Arch)
			if err != nil {
				return nil, fmt.Errorf("registry lists %w", err)
			}
			out = append(out, pl)
		}
	} else {
		for _, p := range want {
			if !slices.Contains(v.Platforms, wire.RegistryPlatform{OS: p.OS, Arch: p.Arch}) {
				return nil, fmt.Errorf("the registry offers no %s package", p)
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the registry lists no platform for %s", v.Version)
	}
	slices.SortFunc(out, func(a, b names.Platform) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out), nil
}

// askDownloads reads every platform's download answer.
func (rel *ProviderOriginRelease) askDownloads(ctx context.Context, c *origin.Client, concurrency int) error {
	answers := make([]*origin.Download, len(rel.Platforms))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i, p := range rel.Platforms {
		g.Go(func() error {
			d, err := c.Download(gctx, rel.Provider, rel.Version, p)
			if err != nil {
				return err
			}
			if want := rel.ZipName(p); d.Filename != want {
				return fmt.Errorf("%s: package named %q, want %q", p, d.Filename, want)
			}
			answers[i] = d
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	first := answers[0]
	for i, d := range answers {
		if d.SHASumsURL != first.SHASumsURL || d.SHASumsSignatureURL != first.SHASumsSignatureURL {
			return fmt.Errorf("platforms disagree on the SHA256SUMS location")
		}
		rel.Downloads[rel.Platforms[i]] = d
	}
	rel.Protocols = first.Protocols
	return nil
}

// fetchChecksums downloads SHA256SUMS and its signature, and reads the
// registry's keys.
func (rel *ProviderOriginRelease) fetchChecksums(ctx context.Context, c *origin.Client) error {
	first := rel.Downloads[rel.Platforms[0]]
	var g errgroup.Group
	for _, f := range []struct {
		ref string
		out *[]byte
	}{{first.SHASumsURL, &rel.SHA256SUMS}, {first.SHASumsSignatureURL, &rel.Signature}} {
		g.Go(func() error {
			u, err := first.Resolve(f.ref)
			if err != nil {
				return err
			}
			var b strings.Builder
			if err := c.FetchFile(ctx, u, rel.Provider.Hostname, oci.MaxSmallFile, &b); err != nil {
				return err
			}
			*f.out = []byte(b.String())
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, k := range first.SigningKeys.GPGPublicKeys {
		kr, err := pgp.ReadKeyring(fmt.Sprintf("%s signing key %d", rel.Provider.Hostname, i+1), []byte(k.ASCIIArmor))
		if err != nil {
			return err
		}
		rel.Keys = append(rel.Keys, kr)
	}
	if len(rel.Keys) == 0 {
		return fmt.Errorf("the registry lists no signing key")
	}
	return nil
}

// verify judges the signature over SHA256SUMS with the policy ReadProvider
// applies (OpenTofu's rules, expiry enforced when asked for), reads
// SHA256SUMS as OpenTofu
// reads it, and checks that it lists every package with the digest the
// registry's download answer names.
func (rel *ProviderOriginRelease) verify() error {
	v, err := rel.policy.Verify(rel.SHA256SUMS, rel.Signature, rel.Keys)
	if err != nil {
		return verificationError("%s: %v", rel.SignatureName(), err)
	}
	rel.KeyID, rel.Warnings = v.KeyID, v.Warnings
	file, err := sha256sums.Read(rel.SHA256SUMS)
	if err != nil {
		return verificationError("%s: %v", rel.SumsName(), err)
	}
	rel.Warnings = append(rel.Warnings, file.Warnings()...)
	rel.Sums = sha256sums.Sums{}
	for _, p := range rel.Platforms {
		name, d := rel.ZipName(p), rel.Downloads[p]
		sum, err := file.Lookup(name)
		if err != nil {
			return verificationError("%s: %v", rel.SumsName(), err)
		}
		if sum != strings.ToLower(d.SHASum) {
			return verificationError("%s lists %s with sha256 %s, the registry's download answer says %q", rel.SumsName(), name, sum, d.SHASum)
		}
		rel.Sums[name] = sum
	}
	return nil
}

// SumsName and SignatureName are the release's file names for SHA256SUMS
// and its signature.
func (rel *ProviderOriginRelease) SumsName() string {
	return names.ProviderSHA256SUMSName(rel.Provider.Type, rel.Version)
}

func (rel *ProviderOriginRelease) SignatureName() string { return rel.SumsName() + ".sig" }

// ZipName is a platform's package file name.
func (rel *ProviderOriginRelease) ZipName(p names.Platform) string {
	return names.ProviderZipName(rel.Provider.Type, rel.Version, p)
}

// ZipSHA256 is the verified sha256 (hex) of a platform's package.
func (rel *ProviderOriginRelease) ZipSHA256(p names.Platform) string { return rel.Sums[rel.ZipName(p)] }

// SumsDigest is SHA256SUMS's digest: it names this release of the
// version, as the origin signed it.
func (rel *ProviderOriginRelease) SumsDigest() digest.Digest { return digest.FromBytes(rel.SHA256SUMS) }

// Has reports whether p is one of the release's platforms.
func (rel *ProviderOriginRelease) Has(p names.Platform) bool {
	_, ok := rel.Downloads[p]
	return ok
}

// OpenZip starts downloading a platform's package from where the registry
// said (credentials only to the registry host itself); the caller hashes
// what it reads against ZipSHA256.
func (rel *ProviderOriginRelease) OpenZip(ctx context.Context, c *origin.Client, p names.Platform, max int64) (*origin.Body, error) {
	d, ok := rel.Downloads[p]
	if !ok {
		return nil, fmt.Errorf("%s %s has no %s package", rel.Provider, rel.Version, p)
	}
	u, err := d.Resolve(d.DownloadURL)
	if err != nil {
		return nil, err
	}
	return c.Open(ctx, u, rel.Provider.Hostname, max)
}

// WriteChecksums writes SHA256SUMS and its signature into a release
// directory.
func (rel *ProviderOriginRelease) WriteChecksums(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, rel.SumsName()), rel.SHA256SUMS, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, rel.SignatureName()), rel.Signature, 0o600)
}

// DownloadZip downloads a platform's package into dir, checking its size
// bound and sha256.
func (rel *ProviderOriginRelease) DownloadZip(ctx context.Context, c *origin.Client, p names.Platform, dir string, max int64) error {
	body, err := rel.OpenZip(ctx, c, p, max)
	if err != nil {
		return err
	}
	defer body.Close()
	name := rel.ZipName(p)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("downloading %s: %w", name, err)
	case n > max:
		return fmt.Errorf("downloading %s: larger than %d bytes", name, max)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != rel.ZipSHA256(p) {
		return verificationError("%s: sha256 %s does not match the registry's %s", name, got, rel.ZipSHA256(p))
	}
	return nil
}

// PushDir reads the release directory (every package, SHA256SUMS and its
// signature) with convert/release, verifying it again as `push provider`
// does, and pushes it with provenance: the artifact `oci-tofu mirror`
// writes. Versions tagged already with this very release are UpToDate.
func (rel *ProviderOriginRelease) PushDir(ctx context.Context, dir string, repo oci.Repository, opts oci.PushOptions) (oci.PushResult, error) {
	r, err := rel.readDir(ctx, dir)
	if err != nil {
		return oci.PushResult{}, err
	}
	res, err := r.Push(ctx, repo, opts)
	rel.SBOMs, rel.IndexNote = r.SBOMs(), r.VersionIndexNote()
	return res, err
}

// PushDirAttested is PushDir with att's attestation of the release, in
// repo (named repository), written before its tags (see
// Attestation.push), and of each platform's SBOM (Attestation.SBOM); a
// nil att attests nothing. Either way the SBOMs are stored
// (release.Provider.Push), and rel.SBOMs says what became of them.
func (rel *ProviderOriginRelease) PushDirAttested(ctx context.Context, dir string, repo oci.Repository, repository string, opts oci.PushOptions, att *Attestation) (oci.PushResult, error) {
	r, err := rel.readDir(ctx, dir)
	if err != nil {
		return oci.PushResult{}, err
	}
	if att != nil {
		r.SBOM.Attest = att.SBOM(repository)
	}
	res, err := att.push(ctx, repo, r, opts, func(ctx context.Context, root ocispec.Descriptor) error {
		return att.Provider(ctx, repo, repository, r, root)
	})
	rel.SBOMs, rel.IndexNote = r.SBOMs(), r.VersionIndexNote()
	return res, err
}

// readDir reads and verifies the release directory.
func (rel *ProviderOriginRelease) readDir(ctx context.Context, dir string) (*release.Provider, error) {
	r, err := release.ReadProvider(ctx, dir, release.Options{Keys: rel.Keys, Platforms: rel.Platforms, EnforceGPGExpiration: rel.policy.EnforceExpiration})
	if err != nil {
		return nil, err
	}
	if err := r.CheckServedAs(rel.Provider.Type); err != nil {
		return nil, err
	}
	if len(r.Protocols) == 0 {
		r.Protocols = rel.Protocols
	}
	return r, nil
}
