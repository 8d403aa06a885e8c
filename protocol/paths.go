package protocol

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/opencontainers/go-digest"
)

// Provider is a provider address: hostname/namespace/type, lower-cased as
// OpenTofu normalises it.
type Provider = names.Provider

// errBadPath marks a request whose path cannot name anything (400).
var errBadPath = errors.New("bad request path")

func badPath(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadPath, fmt.Sprintf(format, args...))
}

// maxPathLen bounds the request paths we parse.
const maxPathLen = 1024

// splitPath splits an escaped path (after the handler's prefix) into
// unescaped segments. Every segment must be non-empty, must not be "." or
// "..", and must not contain an encoded "/" or "\", a NUL or any control
// character: none of the names these protocols carry can, so such paths are
// refused rather than interpreted.
func splitPath(escaped string, n int) ([]string, error) {
	if len(escaped) > maxPathLen {
		return nil, badPath("path longer than %d bytes", maxPathLen)
	}
	raw := strings.Split(escaped, "/")
	if len(raw) != n {
		return nil, badPath("want %d path segments, got %d", n, len(raw))
	}
	out := make([]string, n)
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, badPath("segment %q: %v", s, err)
		}
		if u == "" || u == "." || u == ".." {
			return nil, badPath("empty, \".\" or \"..\" path segment")
		}
		for _, c := range u {
			if c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
				return nil, badPath("segment %q holds a slash or control character", s)
			}
		}
		out[i] = u
	}
	return out, nil
}

func parseName(what, s string) (string, error) {
	s = strings.ToLower(s)
	if !names.ValidProviderPart(s) {
		return "", badPath("invalid provider %s %q", what, s)
	}
	return s, nil
}

func parseHostname(s string) (string, error) {
	s = strings.ToLower(s)
	if !names.ValidHostname(s) {
		return "", badPath("invalid hostname %q", s)
	}
	return s, nil
}

func parseProvider(host, ns, typ string) (Provider, error) {
	var p Provider
	var err error
	if p.Hostname, err = parseHostname(host); err != nil {
		return p, err
	}
	if p.Namespace, err = parseName("namespace", ns); err != nil {
		return p, err
	}
	if p.Type, err = parseName("type", typ); err != nil {
		return p, err
	}
	return p, nil
}

func parseVersion(s string) (versions.Version, error) {
	if len(s) > 128 {
		return versions.Unspecified, badPath("version too long")
	}
	v, err := names.ParseVersion(s)
	if err != nil {
		return versions.Unspecified, badPath("%v", err)
	}
	return v, nil
}

// MirrorRequest is a parsed Provider Network Mirror Protocol path:
// :hostname/:namespace/:type/index.json or …/:version.json.
type MirrorRequest struct {
	Provider Provider
	// Version is Unspecified for index.json.
	Version versions.Version
	Index   bool
}

// ParseMirrorPath parses the escaped path below the mirror's base URL.
func ParseMirrorPath(escaped string) (MirrorRequest, error) {
	seg, err := splitPath(escaped, 4)
	if err != nil {
		return MirrorRequest{}, err
	}
	p, err := parseProvider(seg[0], seg[1], seg[2])
	if err != nil {
		return MirrorRequest{}, err
	}
	r := MirrorRequest{Provider: p}
	if seg[3] == "index.json" {
		r.Index = true
		return r, nil
	}
	vs, ok := strings.CutSuffix(seg[3], ".json")
	if !ok {
		return MirrorRequest{}, badPath("want index.json or <version>.json, got %q", seg[3])
	}
	if r.Version, err = parseVersion(vs); err != nil {
		return MirrorRequest{}, err
	}
	return r, nil
}

// RegistryRequest is a parsed Provider Registry Protocol path:
// :namespace/:type/versions or :namespace/:type/:version/download/:os/:arch.
type RegistryRequest struct {
	Namespace, Type string
	// Download is false for the versions listing.
	Download bool
	Version  versions.Version
	Platform names.Platform
}

// ParseRegistryPath parses the escaped path below providers.v1.
func ParseRegistryPath(escaped string) (RegistryRequest, error) {
	n := strings.Count(escaped, "/") + 1
	if n != 3 && n != 6 {
		return RegistryRequest{}, badPath("want :namespace/:type/versions or :namespace/:type/:version/download/:os/:arch")
	}
	seg, err := splitPath(escaped, n)
	if err != nil {
		return RegistryRequest{}, err
	}
	var r RegistryRequest
	if r.Namespace, err = parseName("namespace", seg[0]); err != nil {
		return r, err
	}
	if r.Type, err = parseName("type", seg[1]); err != nil {
		return r, err
	}
	if n == 3 {
		if seg[2] != "versions" {
			return RegistryRequest{}, badPath("want :namespace/:type/versions")
		}
		return r, nil
	}
	if seg[3] != "download" {
		return RegistryRequest{}, badPath("want :namespace/:type/:version/download/:os/:arch")
	}
	r.Download = true
	if r.Version, err = parseVersion(seg[2]); err != nil {
		return RegistryRequest{}, err
	}
	if r.Platform, err = parsePlatform(seg[4], seg[5]); err != nil {
		return RegistryRequest{}, err
	}
	return r, nil
}

func parsePlatform(os, arch string) (names.Platform, error) {
	if len(os) > 32 || len(arch) > 32 || strings.Contains(os, "_") || strings.Contains(arch, "_") {
		return names.Platform{}, badPath("invalid platform %q/%q", os, arch)
	}
	p, err := names.ParsePlatform(os + "_" + arch)
	if err != nil {
		return names.Platform{}, badPath("%v", err)
	}
	return p, nil
}

// ArchiveFile says which file an archive URL names.
type ArchiveFile int

const (
	ArchiveZip ArchiveFile = iota + 1
	ArchiveSHA256SUMS
	ArchiveSignature
)

// ArchiveRequest is a parsed archive URL path:
// :hostname/:namespace/:type/:version/:index-sha256-hex/:filename, where
// filename is terraform-provider-<type>_<version>_<os>_<arch>.zip,
// …_SHA256SUMS or …_SHA256SUMS.sig. The index digest pins the URL to the
// exact release whose metadata handed it out.
type ArchiveRequest struct {
	Provider Provider
	Version  versions.Version
	Index    digest.Digest
	File     ArchiveFile
	Platform names.Platform
}

// ParseArchivePath parses the escaped path below the archive prefix.
func ParseArchivePath(escaped string) (ArchiveRequest, error) {
	seg, err := splitPath(escaped, 6)
	if err != nil {
		return ArchiveRequest{}, err
	}
	p, err := parseProvider(seg[0], seg[1], seg[2])
	if err != nil {
		return ArchiveRequest{}, err
	}
	r := ArchiveRequest{Provider: p}
	if r.Version, err = parseVersion(seg[3]); err != nil {
		return ArchiveRequest{}, err
	}
	r.Index = digest.NewDigestFromEncoded(digest.SHA256, seg[4])
	if len(seg[4]) != 64 || strings.ToLower(seg[4]) != seg[4] || r.Index.Validate() != nil {
		return ArchiveRequest{}, badPath("invalid index digest %q", seg[4])
	}
	f, err := names.ParseProviderFilename(seg[5])
	if err != nil {
		return ArchiveRequest{}, badPath("%v", err)
	}
	if f.Type != p.Type || f.Version != seg[3] {
		return ArchiveRequest{}, badPath("file %q does not belong to %s %s", seg[5], p, seg[3])
	}
	switch f.Kind {
	case names.ProviderZip:
		r.File, r.Platform = ArchiveZip, f.Platform
	case names.ProviderSHA256SUMS:
		r.File = ArchiveSHA256SUMS
	case names.ProviderSignature:
		if seg[5] != sumsName(p.Type, r.Version)+".sig" {
			return ArchiveRequest{}, badPath("unknown signature file %q", seg[5])
		}
		r.File = ArchiveSignature
	default:
		return ArchiveRequest{}, badPath("unknown file %q", seg[5])
	}
	return r, nil
}

// zipName is the release file name of a platform's package.
func zipName(typ string, v versions.Version, p names.Platform) string {
	return fmt.Sprintf("terraform-provider-%s_%s_%s_%s.zip", typ, v, p.OS, p.Arch)
}

func sumsName(typ string, v versions.Version) string {
	return fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS", typ, v)
}

// archivePath is the escaped path (below the archive prefix) of a file.
func archivePath(p Provider, v versions.Version, index digest.Digest, file string) string {
	return strings.Join([]string{
		url.PathEscape(p.Hostname), p.Namespace, p.Type, url.PathEscape(v.String()), index.Encoded(), url.PathEscape(file),
	}, "/")
}

// Module is a module registry address without its hostname:
// namespace/name/system, lower-cased.
type Module struct {
	Namespace, Name, System string
}

func (m Module) String() string { return m.Namespace + "/" + m.Name + "/" + m.System }

var (
	// moduleNameRE is a module namespace or name: letters, digits, and
	// single "-" or "_" inside (OpenTofu's rule, restricted to what a
	// repository path component can hold).
	moduleNameRE = regexp.MustCompile(`^[a-z0-9]+([_-][a-z0-9]+)*$`)
	// moduleSystemRE is a module's target system, as OpenTofu accepts it.
	moduleSystemRE = regexp.MustCompile(`^[a-z0-9]{1,64}$`)
)

func parseModule(ns, name, system string) (Module, error) {
	m := Module{Namespace: strings.ToLower(ns), Name: strings.ToLower(name), System: strings.ToLower(system)}
	if len(m.Namespace) > 64 || !moduleNameRE.MatchString(m.Namespace) {
		return Module{}, badPath("invalid module namespace %q", ns)
	}
	if len(m.Name) > 64 || !moduleNameRE.MatchString(m.Name) {
		return Module{}, badPath("invalid module name %q", name)
	}
	if !moduleSystemRE.MatchString(m.System) {
		return Module{}, badPath("invalid module system %q", system)
	}
	return m, nil
}

// ModuleRequest is a parsed Module Registry Protocol path:
// :namespace/:name/:system/versions or
// :namespace/:name/:system/:version/download.
type ModuleRequest struct {
	Module Module
	// Download is false for the versions listing.
	Download bool
	Version  versions.Version
}

// ParseModulePath parses the escaped path below modules.v1.
func ParseModulePath(escaped string) (ModuleRequest, error) {
	n := strings.Count(escaped, "/") + 1
	if n != 4 && n != 5 {
		return ModuleRequest{}, badPath("want :namespace/:name/:system/versions or :namespace/:name/:system/:version/download")
	}
	seg, err := splitPath(escaped, n)
	if err != nil {
		return ModuleRequest{}, err
	}
	m, err := parseModule(seg[0], seg[1], seg[2])
	if err != nil {
		return ModuleRequest{}, err
	}
	r := ModuleRequest{Module: m}
	if n == 4 {
		if seg[3] != "versions" {
			return ModuleRequest{}, badPath("want :namespace/:name/:system/versions")
		}
		return r, nil
	}
	if seg[4] != "download" {
		return ModuleRequest{}, badPath("want :namespace/:name/:system/:version/download")
	}
	r.Download = true
	if r.Version, err = parseVersion(seg[3]); err != nil {
		return ModuleRequest{}, err
	}
	return r, nil
}

// ModuleArchiveRequest is a parsed module archive URL path:
// :namespace/:name/:system/:version/:manifest-sha256-hex/:filename, where
// filename is moduleZipName's. The manifest digest pins the URL to the
// exact package whose download answer handed it out.
type ModuleArchiveRequest struct {
	Module   Module
	Version  versions.Version
	Manifest digest.Digest
}

// ParseModuleArchivePath parses the escaped path below the module archive
// prefix.
func ParseModuleArchivePath(escaped string) (ModuleArchiveRequest, error) {
	seg, err := splitPath(escaped, 6)
	if err != nil {
		return ModuleArchiveRequest{}, err
	}
	m, err := parseModule(seg[0], seg[1], seg[2])
	if err != nil {
		return ModuleArchiveRequest{}, err
	}
	r := ModuleArchiveRequest{Module: m}
	if r.Version, err = parseVersion(seg[3]); err != nil {
		return ModuleArchiveRequest{}, err
	}
	if r.Manifest, err = parseHexDigest(seg[4]); err != nil {
		return ModuleArchiveRequest{}, err
	}
	if seg[5] != moduleZipName(m, r.Version) {
		return ModuleArchiveRequest{}, badPath("file %q does not belong to module %s %s", seg[5], m, r.Version)
	}
	return r, nil
}

func parseHexDigest(s string) (digest.Digest, error) {
	d := digest.NewDigestFromEncoded(digest.SHA256, s)
	if len(s) != 64 || strings.ToLower(s) != s || d.Validate() != nil {
		return "", badPath("invalid digest %q", s)
	}
	return d, nil
}

// moduleZipName is the file name of a module package download; it ends in
// .zip so that go-getter unpacks it as a zip archive.
func moduleZipName(m Module, v versions.Version) string {
	return fmt.Sprintf("%s-%s-%s-%s.zip", m.Namespace, m.Name, m.System, v)
}

// moduleArchivePath is the escaped path (below the module archive prefix)
// of a module package.
func moduleArchivePath(m Module, v versions.Version, manifest digest.Digest) string {
	return strings.Join([]string{
		m.Namespace, m.Name, m.System, url.PathEscape(v.String()), manifest.Encoded(), url.PathEscape(moduleZipName(m, v)),
	}, "/")
}

// tofuVersionRE is an OpenTofu release version as the TofuDL mirror
// specification (and tofudl's parser) accepts it.
var tofuVersionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(alpha|beta|rc)(0|[1-9][0-9]*))?$`)

// tofuArtifactRE is a release file name (tofudl's rule).
var tofuArtifactRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)

// parseTofuVersion parses a release version as api.json lists it.
func parseTofuVersion(s string) (versions.Version, error) {
	if len(s) > 64 || !tofuVersionRE.MatchString(s) {
		return versions.Unspecified, badPath("invalid OpenTofu version %q: want MAJOR.MINOR.PATCH with an optional -alphaN, -betaN or -rcN", s)
	}
	return parseVersion(s)
}

func validTofuArtifact(s string) bool {
	return tofuArtifactRE.MatchString(s) && s != "." && s != ".."
}

// TofuDownloadRequest is a parsed TofuDL download path below
// /tofu/download/: v:version/:artifact.
type TofuDownloadRequest struct {
	Version  versions.Version
	Artifact string
}

// ParseTofuDownloadPath parses the escaped path below the download prefix.
func ParseTofuDownloadPath(escaped string) (TofuDownloadRequest, error) {
	seg, err := splitPath(escaped, 2)
	if err != nil {
		return TofuDownloadRequest{}, err
	}
	vs, ok := strings.CutPrefix(seg[0], "v")
	if !ok {
		return TofuDownloadRequest{}, badPath("want v<version>/<artifact>, got %q", seg[0])
	}
	v, err := parseTofuVersion(vs)
	if err != nil {
		return TofuDownloadRequest{}, err
	}
	if !validTofuArtifact(seg[1]) {
		return TofuDownloadRequest{}, badPath("invalid artifact name %q", seg[1])
	}
	return TofuDownloadRequest{Version: v, Artifact: seg[1]}, nil
}
