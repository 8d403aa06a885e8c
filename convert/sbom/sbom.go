// Package sbom makes the software bill of materials (SBOM) of a provider
// package: the zip of one platform, holding the provider's executable
// (terraform-provider-NAME_vX), and usually a licence and a readme.
//
// FromZip reads the zip and each executable in it, and the Go build
// information each executable carries (debug/buildinfo: the toolchain
// version, the main module, every module linked in with its go.sum hash,
// and the build settings), into a Document; Document.SPDX writes it as an
// SPDX 2.3 JSON document, byte for byte the same for the same zip and
// Options; ParseSPDX reads such a document back.
//
// What the SPDX document holds (SPDX 2.3 clauses 6, 7 and 11):
//
//   - the zip, the package the document DESCRIBES: its release file name,
//     the provider's version and the zip's sha256;
//   - each executable the zip CONTAINS (a file that starts as an ELF,
//     PE, Mach-O or XCOFF file does, or is named terraform-provider-*),
//     with its sha256 and size; a Go executable's build information, as
//     `go version -m` prints it, is its sourceInfo; an executable that is
//     not a Go binary (or whose build information cannot be read) is
//     listed all the same, its comment saying why it has no modules;
//   - for a Go executable: the main module it was built from (the
//     executable CONTAINS it), and each module and the Go standard library
//     the main module DEPENDS_ON, with a purl (pkg:golang/PATH@VERSION);
//     a module replaced in the build is described by its replacement, the
//     comment naming what it replaces; the go.sum hash (h1:…, a SHA-256
//     of the module's file tree, not of any one file, so no SPDX checksum)
//     is in the comment.
//
// The other files of the zip (licences, readmes) are not listed: they are
// no software, and the zip's own sha256 covers them.
//
// The standard library is named as syft names it and as OSV and govulncheck
// match it: the package "stdlib", its version the toolchain's ("go1.22.1"),
// its purl pkg:golang/stdlib@1.22.1 (no "go" prefix, as in the OSV Go
// entries' versions) and its CPE cpe:2.3:a:golang:go:1.22.1:-:*:*:*:*:*:*.
//
// Everything is bounded: the zip's entries (MaxEntries), their declared and
// actual uncompressed sizes together (MaxUncompressed), and the build
// information accepted (MaxBuildInfo bytes, MaxModules modules). An
// executable is copied to a temporary file (never into memory) while its
// sha256 is computed and its bytes are scanned for build information
// headers; a header that declares more than MaxBuildInfo makes the
// executable "not a readable Go binary" before debug/buildinfo reads it (that
// package reads what a header declares up to the end of its section, which a
// forged file can make as large as the file). Build information in the
// format of Go before 1.18 (pointers instead of lengths) is bounded by the
// entry's size only.
//
// CycloneDX: not written. SPDX is what `cosign attest --type spdxjson`, the
// image's own SBOM (tools/image) and the vulnerability scanners (grype,
// trivy, osv-scanner) read; a CycloneDX 1.6 writer with
// github.com/CycloneDX/cyclonedx-go would be about a hundred lines over
// Document, and worth it only for tools that read CycloneDX alone
// (Dependency-Track): it can be added then, from Document, without changing
// the SPDX.
package sbom

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// SPDXMediaType is the media type of an SPDX JSON document.
const SPDXMediaType = "application/spdx+json"

// SPDXPredicateType is the in-toto predicate type of an SPDX SBOM
// attestation: `cosign verify-attestation --type spdxjson` asks for it.
const SPDXPredicateType = "https://spdx.dev/Document"

// The bounds of FromZip.
const (
	// MaxEntries is the most entries a package zip may have.
	MaxEntries = 256
	// MaxUncompressed is the most bytes the zip's entries may hold
	// together, as declared and as read.
	MaxUncompressed = 1 << 30
	// MaxBuildInfo is the largest Go build information accepted, in bytes
	// (a provider with 400 modules has about 40 KiB).
	MaxBuildInfo = 4 << 20
	// MaxModules is the most modules accepted in one build information.
	MaxModules = 10000
)

// Options name the package the SBOM is of.
type Options struct {
	// Name is the provider: its address (registry.opentofu.org/hashicorp/aws)
	// or its type (aws); the type is its last part.
	Name string
	// Version is the provider's version (canonical semver, no "v").
	Version string
	// Platform is the package's platform, os_arch (linux_amd64).
	Platform string
	// ZipDigest is the zip's sha256 digest; empty: FromZip computes it.
	ZipDigest digest.Digest
	// Created is the SBOM's creation time, for reproducible documents
	// e.g. the release's time; zero is the Unix epoch.
	Created time.Time
	// TempDir is where executables are copied while they are read; empty
	// is os.TempDir().
	TempDir string
	// SHA256, when set, holds the sha256 (hex) of entries by their name
	// in the zip, as the caller computed them reading the same zip (the
	// h1 hash reads every file): FromZip takes them instead of hashing
	// those entries again.
	SHA256 map[string]string
}

// Document is what FromZip found in a package: its executables, each with
// its Go build information or none.
type Document struct {
	Name     string // the provider's address or type, from Options
	Version  string
	Platform string
	// FileName is the zip's release file name,
	// terraform-provider-TYPE_VERSION_OS_ARCH.zip.
	FileName  string
	ZipDigest digest.Digest
	Created   time.Time
	// Executables, by name.
	Executables []Executable
}

// Executable is an executable file in the zip.
type Executable struct {
	Name   string // its path in the zip
	SHA256 string // hex
	Size   int64
	// Go is the executable's Go build information; nil: not a Go
	// binary, or its build information could not be read (NotGo says why).
	Go    *GoBuild
	NotGo string
}

// GoBuild is the build information of a Go executable (runtime/debug.BuildInfo).
type GoBuild struct {
	GoVersion string // go1.22.1
	Path      string // the main package's import path
	Main      Module
	Deps      []Module // as the build information lists them (by path)
	// Settings are the build settings: GOOS, GOARCH, CGO_ENABLED,
	// vcs.revision, vcs.time, -ldflags, -trimpath…
	Settings map[string]string
}

// Module is a Go module of a build.
type Module struct {
	Path, Version string
	Sum           string // the go.sum hash, h1:…
	Replace       *Module
}

// Modules are the modules the executable was built with: the main module
// and its dependencies.
func (b *GoBuild) Modules() []Module {
	return append([]Module{b.Main}, b.Deps...)
}

// StdlibPURL is the purl of the Go standard library a toolchain version
// (go1.22.1, possibly followed by " X:…" experiments) builds with:
// pkg:golang/stdlib@1.22.1, as syft writes it and as the OSV Go entries
// version "stdlib"; "" for a development toolchain.
func StdlibPURL(goVersion string) string {
	v := stdlibVersion(goVersion)
	if v == "" {
		return ""
	}
	return "pkg:golang/stdlib@" + v
}

// stdlibVersion is a toolchain version without its "go" prefix and any
// suffix after a space or "+" (1.22.1, 1.23rc1), or "" if it is none.
func stdlibVersion(goVersion string) string {
	v, _, _ := strings.Cut(goVersion, " ")
	v, _, _ = strings.Cut(v, "+")
	v, ok := strings.CutPrefix(v, "go")
	if !ok || v == "" || v[0] < '0' || v[0] > '9' {
		return ""
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '.' || c == '-') {
			return ""
		}
	}
	return v
}

// fileName checks the options and names the zip.
func (o Options) fileName() (string, error) {
	typ := o.Name[strings.LastIndexByte(o.Name, '/')+1:]
	p, err := names.ParsePlatform(o.Platform)
	if err != nil {
		return "", fmt.Errorf("sbom: platform %q: %w", o.Platform, err)
	}
	name := names.ProviderZipName(typ, o.Version, p)
	if f, err := names.ParseProviderFilename(name); err != nil || f.Kind != names.ProviderZip {
		return "", fmt.Errorf("sbom: name %q and version %q make no provider package name: %v", o.Name, o.Version, err)
	}
	return name, nil
}

// zipDigest is the given digest, checked, or the zip's computed.
func zipDigest(r io.ReaderAt, size int64, d digest.Digest) (digest.Digest, error) {
	if d != "" {
		if err := d.Validate(); err != nil || d.Algorithm() != digest.SHA256 {
			return "", fmt.Errorf("sbom: zip digest %q is no sha256 digest", d)
		}
		return d, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		return "", fmt.Errorf("sbom: reading the zip: %w", err)
	}
	return digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil))), nil
}
