package convert

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ReleaseOptions say how a provider release must be verified.
type ReleaseOptions struct {
	// Keys the SHA256SUMS signature must verify against.
	Keys []*Keyring
	// Unsigned accepts a release without a verified signature (in-house
	// builds); zips are still checked against SHA256SUMS when present.
	Unsigned bool
	// Signer, when set, signs a release that has no signature, generating
	// SHA256SUMS when it has none either.
	Signer *Signer
	// SignTime dates generated signatures (reproducible pushes); zero means
	// the signing key's creation time.
	SignTime time.Time
	// Platforms, when not empty, selects which platforms to take; each must
	// be present.
	Platforms []names.Platform
	// DeferZipCheck takes each zip's digest from the (signature-checked)
	// SHA256SUMS instead of reading the zip: the zips are then checked by
	// VerifyPackages, which PushProviderRelease runs before writing
	// anything. A re-push that finds the registry already holding the
	// release thus reads no zip. Without SHA256SUMS it has no effect.
	DeferZipCheck bool
}

// ProviderRelease is a verified provider release directory.
type ProviderRelease struct {
	Type, Version string
	Packages      []ReleasePackage
	// Files kept as provenance; Signature is in binary form.
	Files     oci.ProvenanceFiles
	KeyIDs    []string
	Protocols []string
}

// ReleasePackage is one verified platform zip.
type ReleasePackage struct {
	Platform names.Platform
	Path     string
	Filename string
	SHA256   string
	Size     int64
	// H1 is set by HashPackages.
	H1 string
	// verified: the file was read and matched SHA256, and opens as a zip.
	verified bool
}

// maxSmallFile bounds SHA256SUMS, signatures and manifest.json.
const maxSmallFile = 1 << 20

// ReadProviderRelease reads a provider release directory and verifies it
// completely before anything is written anywhere: one type and version, the
// SHA256SUMS signature, every zip's digest, and every zip readable.
func ReadProviderRelease(dir string, opts ReleaseOptions) (*ProviderRelease, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var sumsName, sigName, manifestName string
	var sigNames []string
	zips := map[names.Platform]string{}
	releases := map[string]bool{}
	var typ, version string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, names.ProviderFilePrefix) || e.IsDir() {
			continue
		}
		f, err := names.ParseProviderFilename(name)
		if err != nil {
			return nil, err
		}
		typ, version = f.Type, f.Version
		releases[f.Type+" "+f.Version] = true
		switch f.Kind {
		case names.ProviderZip:
			zips[f.Platform] = name
		case names.ProviderSHA256SUMS:
			sumsName = name
		case names.ProviderSignature:
			sigNames = append(sigNames, name)
		case names.ProviderManifest:
			manifestName = name
		}
	}
	if len(releases) == 0 {
		return nil, fmt.Errorf("%s holds no provider release (%s<type>_<version>_<os>_<arch>.zip files)", dir, names.ProviderFilePrefix)
	}
	if len(releases) > 1 {
		var list []string
		for r := range releases {
			list = append(list, r)
		}
		sort.Strings(list)
		return nil, fmt.Errorf("%s holds more than one provider release (%s): push one type and version at a time", dir, strings.Join(list, ", "))
	}
	if len(zips) == 0 {
		return nil, fmt.Errorf("%s holds no provider zip for %s %s", dir, typ, version)
	}
	sigName, err = pickSignature(sigNames, typ, version)
	if err != nil {
		return nil, err
	}
	rel := &ProviderRelease{Type: typ, Version: version}

	// Select platforms.
	selected := map[names.Platform]string{}
	if len(opts.Platforms) == 0 {
		selected = zips
	}
	for _, p := range opts.Platforms {
		z, ok := zips[p]
		if !ok {
			return nil, fmt.Errorf("platform %s was asked for, but %s has no %s", p, dir, names.ProviderZipName(typ, version, p))
		}
		selected[p] = z
	}

	// SHA256SUMS and its signature.
	var sums SHA256Sums
	if sumsName != "" {
		data, err := readBounded(filepath.Join(dir, sumsName), maxSmallFile)
		if err != nil {
			return nil, err
		}
		if sums, err = ParseSHA256Sums(data); err != nil {
			return nil, fmt.Errorf("%s: %w", sumsName, err)
		}
		rel.Files.SHA256SUMS = oci.NamedBytes{Name: sumsName, Data: data}
	}
	switch {
	case sigName != "" && sumsName == "":
		return nil, fmt.Errorf("%s has a signature (%s) but no %s", dir, sigName, names.ProviderSHA256SUMSName(typ, version))
	case sigName != "" && len(opts.Keys) > 0:
		sig, err := readBounded(filepath.Join(dir, sigName), maxSmallFile)
		if err != nil {
			return nil, err
		}
		bin, err := DearmorSignature(sig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sigName, err)
		}
		v, err := VerifyDetached(rel.Files.SHA256SUMS.Data, bin, opts.Keys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sigName, err)
		}
		rel.Files.Signature = oci.NamedBytes{Name: names.ProviderSHA256SUMSName(typ, version) + ".sig", Data: bin}
		rel.Files.Keys = oci.NamedBytes{Name: "signing-keys.asc", Data: v.Keyring.Armored}
		rel.KeyIDs = []string{v.KeyID}
	case opts.Signer != nil:
		// Signed below, once SHA256SUMS is known.
	case opts.Unsigned:
	case sigName != "":
		return nil, fmt.Errorf("%s is signed but no --key was given to verify it (or pass --unsigned to skip the check)", sumsName)
	case sumsName != "":
		return nil, fmt.Errorf("%s has no signature (%s.sig): give --sign-key to sign it, or --unsigned for an in-house build", sumsName, sumsName)
	default:
		return nil, fmt.Errorf("%s has no %s: give --sign-key to create and sign one, or --unsigned for an in-house build", dir, names.ProviderSHA256SUMSName(typ, version))
	}

	// Every zip listed for this release must be here unless platforms were chosen.
	if sums != nil && len(opts.Platforms) == 0 {
		for name := range sums {
			if f, err := names.ParseProviderFilename(name); err == nil && f.Kind == names.ProviderZip && f.Type == typ && f.Version == version {
				if _, ok := zips[f.Platform]; !ok {
					return nil, fmt.Errorf("%s lists %s, but %s has no such file (missing platform; use --platform to push a subset)", sumsName, name, dir)
				}
			}
		}
	}

	// Check zips in parallel: digest against SHA256SUMS, and readable.
	platforms := make([]names.Platform, 0, len(selected))
	for p := range selected {
		platforms = append(platforms, p)
	}
	sort.Slice(platforms, func(i, j int) bool { return platforms[i].String() < platforms[j].String() })
	rel.Packages = make([]ReleasePackage, len(platforms))
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i, p := range platforms {
		name := selected[p]
		g.Go(func() error {
			check := checkZip
			if opts.DeferZipCheck && sums != nil {
				check = statZip
			}
			pkg, err := check(filepath.Join(dir, name), sums, sumsName)
			if err != nil {
				return err
			}
			pkg.Platform = p
			rel.Packages[i] = *pkg
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// Protocol versions from manifest.json, checked like a zip when listed.
	if manifestName != "" {
		data, err := readBounded(filepath.Join(dir, manifestName), maxSmallFile)
		if err != nil {
			return nil, err
		}
		if want, ok := sums[manifestName]; ok && digest.FromBytes(data).Encoded() != want {
			return nil, fmt.Errorf("%s: sha256 does not match %s", manifestName, sumsName)
		}
		if rel.Protocols, err = parseReleaseManifest(data); err != nil {
			return nil, fmt.Errorf("%s: %w", manifestName, err)
		}
		rel.Files.ReleaseManifest = oci.NamedBytes{Name: manifestName, Data: data}
	}

	if opts.Signer != nil && rel.Files.Signature.Data == nil {
		if err := rel.sign(opts, sums == nil); err != nil {
			return nil, err
		}
	}
	return rel, nil
}

func (rel *ProviderRelease) sign(opts ReleaseOptions, generate bool) error {
	name := names.ProviderSHA256SUMSName(rel.Type, rel.Version)
	if generate {
		sums := SHA256Sums{}
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
	rel.Files.Signature = oci.NamedBytes{Name: name + ".sig", Data: sig}
	rel.Files.Keys = oci.NamedBytes{Name: "signing-keys.asc", Data: opts.Signer.Public}
	rel.KeyIDs = []string{opts.Signer.KeyID()}
	return nil
}

func checkZip(path string, sums SHA256Sums, sumsName string) (*ReleasePackage, error) {
	name := filepath.Base(path)
	want, listed := sums[name]
	if sums != nil && !listed {
		return nil, fmt.Errorf("%s: not listed in %s", name, sumsName)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum, size, err := SHA256File(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if listed && sum != want {
		return nil, fmt.Errorf("%s: sha256 %s does not match %s (%s): the file was altered or the wrong file", name, sum, sumsName, want)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not a readable zip: %w", name, err)
	}
	zr.Close()
	return &ReleasePackage{Path: path, Filename: name, SHA256: sum, Size: size, verified: true}, nil
}

// statZip takes a listed zip's digest from SHA256SUMS and its size from the
// file system; VerifyPackages reads it later.
func statZip(path string, sums SHA256Sums, sumsName string) (*ReleasePackage, error) {
	name := filepath.Base(path)
	want, listed := sums[name]
	if !listed {
		return nil, fmt.Errorf("%s: not listed in %s", name, sumsName)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return &ReleasePackage{Path: path, Filename: name, SHA256: want, Size: st.Size()}, nil
}

// VerifyPackages reads every zip not yet checked: its sha256 must be the
// one recorded, and it must open as a zip.
func (rel *ProviderRelease) VerifyPackages() error {
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i := range rel.Packages {
		p := &rel.Packages[i]
		if p.verified {
			continue
		}
		g.Go(func() error {
			checked, err := checkZip(p.Path, SHA256Sums{p.Filename: p.SHA256}, "SHA256SUMS")
			if err != nil {
				return err
			}
			if checked.Size != p.Size {
				return fmt.Errorf("%s changed while it was being pushed", p.Filename)
			}
			p.verified = true
			return nil
		})
	}
	return g.Wait()
}

// HashPackages computes each package's h1 (unpacking every zip), in
// parallel. Artifact needs it; PushProviderRelease calls it only when the
// registry does not already hold the release.
func (rel *ProviderRelease) HashPackages() error {
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i := range rel.Packages {
		p := &rel.Packages[i]
		if p.H1 != "" {
			continue
		}
		g.Go(func() error {
			h1, err := HashZipFileH1(p.Path)
			p.H1 = h1
			return err
		})
	}
	return g.Wait()
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

func pickSignature(sigNames []string, typ, version string) (string, error) {
	if len(sigNames) == 0 {
		return "", nil
	}
	plain := names.ProviderSHA256SUMSName(typ, version) + ".sig"
	for _, n := range sigNames {
		if n == plain {
			return n, nil
		}
	}
	if len(sigNames) == 1 {
		return sigNames[0], nil
	}
	return "", fmt.Errorf("several signatures (%s) and none named %s", strings.Join(sigNames, ", "), plain)
}

// Artifact builds the OCI artifact for a verified release: the provider
// index OpenTofu reads, plus oci-tofu's provenance manifest.
func (rel *ProviderRelease) Artifact() (*oci.Artifact, error) {
	if err := rel.VerifyPackages(); err != nil {
		return nil, err
	}
	if err := rel.HashPackages(); err != nil {
		return nil, err
	}
	return rel.build()
}

// build assembles the artifact from the packages as they are recorded.
func (rel *ProviderRelease) build() (*oci.Artifact, error) {
	prov := oci.Provenance{
		Type:          rel.Type,
		Version:       rel.Version,
		Protocols:     rel.Protocols,
		SigningKeyIDs: rel.KeyIDs,
		Platforms:     map[string]oci.ProvenancePlatform{},
	}
	pkgs := make([]oci.ProviderPackage, len(rel.Packages))
	for i, p := range rel.Packages {
		prov.Platforms[p.Platform.String()] = oci.ProvenancePlatform{Filename: p.Filename, H1: p.H1}
		pkgs[i] = oci.ProviderPackage{Platform: p.Platform, Zip: p.zipDescriptor(), Open: p.open}
	}
	pa, err := oci.BuildProvenance(prov, rel.Files)
	if err != nil {
		return nil, err
	}
	return oci.BuildProvider(pkgs, pa)
}
