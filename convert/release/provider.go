// Package release reads the release directories that publishers ship and
// pushes them as OpenTofu artifacts: provider releases (zips, SHA256SUMS,
// its OpenPGP signature and manifest.json) and OpenTofu releases (the
// files a TofuDL mirror serves). Everything is verified before anything is
// written, and the version tag is written last.
package release

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Options say how a provider release must be verified.
type Options struct {
	// Keys the SHA256SUMS signature must verify against.
	Keys []*pgp.Keyring
	// Unsigned accepts a release without a verified signature (in-house
	// builds); zips are still checked against SHA256SUMS when present.
	Unsigned bool
	// Signer, when set, signs a release that has no signature, generating
	// SHA256SUMS when it has none either.
	Signer *pgp.Signer
	// SignTime dates generated signatures (reproducible pushes); zero means
	// the signing key's creation time.
	SignTime time.Time
	// EnforceGPGExpiration refuses a release whose signature verifies only
	// with an expired key, subkey or signature date, as OpenTofu does with
	// OPENTOFU_ENFORCE_GPG_EXPIRATION=true. Without it such a release is
	// accepted with a warning (Provider.Warnings), as OpenTofu 1.12 installs
	// it with a warning.
	EnforceGPGExpiration bool
	// Platforms, when not empty, selects which platforms to take; each must
	// be present.
	Platforms []names.Platform
}

// Provider is a provider release directory whose SHA256SUMS and signature
// have been verified. Each package's digest is the one the signed
// SHA256SUMS lists (or, for a release without one, the one its file has):
// the zips themselves are read only when an artifact is built from them
// (Artifact, Push), so a re-push that finds the registry holding the
// release reads none.
type Provider struct {
	Type, Version string
	Packages      []Package
	// Files kept as provenance; Signature is in binary form.
	Files     oci.ProvenanceFiles
	KeyIDs    []string
	Protocols []string
	// Warnings say what OpenTofu puts up with while installing the release
	// but handles differently from a clean one: an expired signing key
	// (tofu prints a warning), a SHA256SUMS line that makes tofu drop the
	// signed hashes, a name listed twice with different digests.
	Warnings []string
	// Repository, when set, is the registry repository the release is
	// pushed to: Push refuses one named after another type, once the
	// release has verified (CheckRepository).
	Repository string
	// SBOM says what Push does about the platforms' SBOMs (sbom.go): by
	// default it makes and stores them.
	SBOM SBOMOptions
	// sbomResults are what the last Push did about them (SBOMs).
	sbomResults []SBOMResult
	// pushed is what Push built and wrote, when it built the release
	// itself (not when the registry already held it): Predicate takes the
	// h1 hashes from it instead of reading them back (attest.go).
	pushed *builtRelease
	// indexNote is what the last Push could not do about the version
	// index (VersionIndexNote).
	indexNote string
}

// Package is one platform's zip of a release.
type Package struct {
	Platform names.Platform
	Path     string
	Filename string
	// SHA256 is the digest the zip must have; Size its size on disk.
	SHA256 string
	Size   int64
	// H1 is the zip's h1 when the reader already computed it (the push
	// checks SHA256 first, so it is the h1 of what is pushed); "" to
	// compute it at push time.
	H1 string
}

// releaseFiles are the provider release files found in a directory.
type releaseFiles struct {
	dir               string
	typ, version      string
	zips              map[names.Platform]string
	sums, manifest    string
	signatureChoices  []string
	releasesInTheDir  map[string]bool
	selectedPlatforms map[names.Platform]string
}

// ReadProvider reads a provider release directory and verifies its
// metadata before anything is written anywhere: one type and version, the
// SHA256SUMS signature, every zip listed, and the release manifest. The
// zips' contents are checked by Artifact and Push.
func ReadProvider(ctx context.Context, dir string, opts Options) (*Provider, error) {
	rf, err := findReleaseFiles(dir)
	if err != nil {
		return nil, err
	}
	if err := rf.selectPlatforms(opts.Platforms); err != nil {
		return nil, err
	}
	rel := &Provider{Type: rf.typ, Version: rf.version}
	if err := rel.readSums(ctx, rf); err != nil {
		return nil, err
	}
	// The signature first, then what OpenTofu checks after it: its reading
	// of SHA256SUMS for the lock file.
	if err := rel.verifySignature(ctx, rf, opts); err != nil {
		return nil, err
	}
	sums, err := rel.parseSums()
	if err != nil {
		return nil, err
	}
	if sums != nil && len(opts.Platforms) == 0 {
		if err := rf.checkNoneMissing(sums); err != nil {
			return nil, err
		}
	}
	if rel.Packages, err = rf.packages(ctx, sums); err != nil {
		return nil, err
	}
	if err := rel.readManifest(ctx, rf, sums); err != nil {
		return nil, err
	}
	if opts.Signer != nil && rel.Files.Signature.Data == nil {
		if err := rel.sign(opts, sums == nil); err != nil {
			return nil, err
		}
	}
	return rel, nil
}

// findReleaseFiles lists a directory's provider release files, refusing
// directories with none or with more than one release.
func findReleaseFiles(dir string) (*releaseFiles, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rf := &releaseFiles{dir: dir, zips: map[names.Platform]string{}, releasesInTheDir: map[string]bool{}}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, names.ProviderFilePrefix) || e.IsDir() {
			continue
		}
		f, err := names.ParseProviderFilename(name)
		if err != nil {
			return nil, err
		}
		rf.add(name, f)
	}
	switch {
	case len(rf.releasesInTheDir) == 0:
		return nil, fmt.Errorf("%s holds no provider release (%s<type>_<version>_<os>_<arch>.zip files)", dir, names.ProviderFilePrefix)
	case len(rf.releasesInTheDir) > 1:
		return nil, fmt.Errorf("%s holds more than one provider release (%s): push one type and version at a time", dir, strings.Join(slices.Sorted(maps.Keys(rf.releasesInTheDir)), ", "))
	case len(rf.zips) == 0:
		return nil, fmt.Errorf("%s holds no provider zip for %s %s", dir, rf.typ, rf.version)
	}
	return rf, nil
}

func (rf *releaseFiles) add(name string, f names.ProviderFile) {
	rf.typ, rf.version = f.Type, f.Version
	rf.releasesInTheDir[f.Type+" "+f.Version] = true
	switch f.Kind {
	case names.ProviderZip:
		rf.zips[f.Platform] = name
	case names.ProviderSHA256SUMS:
		rf.sums = name
	case names.ProviderSignature:
		rf.signatureChoices = append(rf.signatureChoices, name)
	case names.ProviderManifest:
		rf.manifest = name
	}
}

func (rf *releaseFiles) path(name string) string { return filepath.Join(rf.dir, name) }

// selectPlatforms picks the zips to take: every one, or those asked for.
func (rf *releaseFiles) selectPlatforms(platforms []names.Platform) error {
	if len(platforms) == 0 {
		rf.selectedPlatforms = rf.zips
		return nil
	}
	rf.selectedPlatforms = map[names.Platform]string{}
	for _, p := range platforms {
		z, ok := rf.zips[p]
		if !ok {
			return fmt.Errorf("platform %s was asked for, but %s has no %s", p, rf.dir, names.ProviderZipName(rf.typ, rf.version, p))
		}
		rf.selectedPlatforms[p] = z
	}
	return nil
}

// readSums reads SHA256SUMS when the release has one.
func (rel *Provider) readSums(ctx context.Context, rf *releaseFiles) error {
	if rf.sums == "" {
		return nil
	}
	data, err := localfile.ReadBoundedContext(ctx, rf.path(rf.sums), oci.MaxSmallFile)
	if err != nil {
		return err
	}
	rel.Files.SHA256SUMS = oci.NamedBytes{Name: rf.sums, Data: data}
	return nil
}

// parseSums reads SHA256SUMS as OpenTofu reads it: a file OpenTofu cannot
// read is refused, with the line and the reason; what it reads
// differently from a clean file becomes a warning.
func (rel *Provider) parseSums() (*sha256sums.File, error) {
	f := rel.Files.SHA256SUMS
	if f.Data == nil {
		return nil, nil
	}
	sums, err := sha256sums.Read(f.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	rel.Warnings = append(rel.Warnings, sums.Warnings()...)
	return sums, nil
}

// verifySignature checks SHA256SUMS's signature against the keys, or
// decides that the release may go without one.
func (rel *Provider) verifySignature(ctx context.Context, rf *releaseFiles, opts Options) error {
	sigName, err := pickSignature(rf.signatureChoices, rf.typ, rf.version)
	if err != nil {
		return err
	}
	sumsName := names.ProviderSHA256SUMSName(rf.typ, rf.version)
	switch {
	case sigName != "" && rf.sums == "":
		return fmt.Errorf("%s has a signature (%s) but no %s", rf.dir, sigName, sumsName)
	case sigName != "" && len(opts.Keys) > 0:
		sig, err := localfile.ReadBoundedContext(ctx, rf.path(sigName), oci.MaxSmallFile)
		if err != nil {
			return err
		}
		policy := pgp.Policy{EnforceExpiration: opts.EnforceGPGExpiration}
		v, err := policy.Verify(rel.Files.SHA256SUMS.Data, sig, opts.Keys)
		if err != nil {
			return fmt.Errorf("%s: %w", sigName, err)
		}
		rel.Files.Signature = oci.NamedBytes{Name: names.ProviderSignatureName(rf.typ, rf.version), Data: sig}
		rel.Files.Keys = oci.NamedBytes{Name: signingKeysName, Data: v.Keyring.Armored}
		rel.KeyIDs = []string{v.KeyID}
		rel.Warnings = append(rel.Warnings, v.Warnings...)
		return nil
	case opts.Signer != nil || opts.Unsigned:
		return nil // signed later, once SHA256SUMS is known; or accepted unsigned
	case sigName != "":
		return fmt.Errorf("%s is signed: %w", rf.sums, pgp.ErrNoKey)
	case rf.sums != "":
		return fmt.Errorf("%s %w (no %s.sig)", rf.sums, ErrNotSigned, rf.sums)
	default:
		return fmt.Errorf("%s has no %s: %w", rf.dir, sumsName, ErrNotSigned)
	}
}

// checkNoneMissing makes sure every zip SHA256SUMS lists for this release
// is in the directory (unless platforms were chosen).
func (rf *releaseFiles) checkNoneMissing(sums *sha256sums.File) error {
	for name := range sums.Sums() {
		f, err := names.ParseProviderFilename(name)
		if err != nil || f.Kind != names.ProviderZip || f.Type != rf.typ || f.Version != rf.version {
			continue
		}
		if _, ok := rf.zips[f.Platform]; !ok {
			return fmt.Errorf("%s lists %s, but %s has no such file: %w", rf.sums, name, rf.dir, ErrMissingPlatform)
		}
	}
	return nil
}

// readManifest reads the plugin protocol versions from manifest.json,
// checked like a zip when SHA256SUMS lists it.
func (rel *Provider) readManifest(ctx context.Context, rf *releaseFiles, sums *sha256sums.File) error {
	if rf.manifest == "" {
		return nil
	}
	data, err := localfile.ReadBoundedContext(ctx, rf.path(rf.manifest), oci.MaxSmallFile)
	if err != nil {
		return err
	}
	if sums != nil {
		// OpenTofu does not check manifest.json; we do where it is listed.
		if want, err := sums.Lookup(rf.manifest); err == nil && digest.FromBytes(data).Encoded() != want {
			return fmt.Errorf("%s: sha256 does not match %s", rf.manifest, rf.sums)
		}
	}
	if rel.Protocols, err = parseReleaseManifest(data); err != nil {
		return fmt.Errorf("%s: %w", rf.manifest, err)
	}
	rel.Files.ReleaseManifest = oci.NamedBytes{Name: rf.manifest, Data: data}
	return nil
}

// signingKeysName is the name the provenance gives the signing keys.
const signingKeysName = "signing-keys.asc"

func (rel *Provider) sign(opts Options, generate bool) error {
	name := names.ProviderSHA256SUMSName(rel.Type, rel.Version)
	if generate {
		sums := sha256sums.Sums{}
		for _, p := range rel.Packages {
			sums[p.Filename] = p.SHA256
		}
		if m := rel.Files.ReleaseManifest; m.Data != nil {
			sums[m.Name] = digest.FromBytes(m.Data).Encoded()
		}
		rel.Files.SHA256SUMS = oci.NamedBytes{Name: name, Data: sums.Bytes()}
	}
	t := opts.SignTime
	if t.IsZero() {
		t = opts.Signer.Entity.PrimaryKey.CreationTime
	}
	sig, err := opts.Signer.Sign(rel.Files.SHA256SUMS.Data, t)
	if err != nil {
		return err
	}
	rel.Files.Signature = oci.NamedBytes{Name: names.ProviderSignatureName(rel.Type, rel.Version), Data: sig}
	rel.Files.Keys = oci.NamedBytes{Name: signingKeysName, Data: opts.Signer.Public}
	rel.KeyIDs = []string{opts.Signer.KeyID()}
	return nil
}

func parseReleaseManifest(data []byte) ([]string, error) {
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a provider release manifest: %w", err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("unsupported release manifest version %d", m.Version)
	}
	for _, p := range m.Metadata.ProtocolVersions {
		if _, err := names.ParseProtocolVersion(p); err != nil {
			return nil, err
		}
	}
	return m.Metadata.ProtocolVersions, nil
}

func pickSignature(choices []string, typ, version string) (string, error) {
	if len(choices) == 0 {
		return "", nil
	}
	plain := names.ProviderSignatureName(typ, version)
	for _, n := range choices {
		if n == plain {
			return n, nil
		}
	}
	if len(choices) == 1 {
		return choices[0], nil
	}
	return "", fmt.Errorf("several signatures (%s) and none named %s", strings.Join(choices, ", "), plain)
}
