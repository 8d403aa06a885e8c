package proxy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

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

func parseProvider(host, ns, typ string) (names.Provider, error) {
	var p names.Provider
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

func parseVersion(s string) (names.Version, error) {
	v, err := names.ParseVersion(s)
	if err != nil {
		return names.Version{}, badPath("%v", err)
	}
	return v, nil
}

// MirrorRequest is a parsed Provider Network Mirror Protocol path:
// :hostname/:namespace/:type/index.json or …/:version.json.
type MirrorRequest struct {
	Provider names.Provider
	// Version is unset for index.json.
	Version names.Version
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
	Version  names.Version
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
	if strings.Contains(os, "_") || strings.Contains(arch, "_") {
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

// The files of a provider release the proxy serves.
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
	Provider names.Provider
	Version  names.Version
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
	if r.Index, err = parseHexDigest(seg[4]); err != nil {
		return ArchiveRequest{}, err
	}
	if r.File, r.Platform, err = archiveFile(p, seg[3], seg[5]); err != nil {
		return ArchiveRequest{}, err
	}
	return r, nil
}

// archiveFile tells which file of release p/version a file name is.
func archiveFile(p names.Provider, version, name string) (ArchiveFile, names.Platform, error) {
	f, err := names.ParseProviderFilename(name)
	if err != nil {
		return 0, names.Platform{}, badPath("%v", err)
	}
	if f.Type != p.Type || f.Version != version {
		return 0, names.Platform{}, badPath("file %q does not belong to %s %s", name, p, version)
	}
	switch f.Kind {
	case names.ProviderZip:
		return ArchiveZip, f.Platform, nil
	case names.ProviderSHA256SUMS:
		return ArchiveSHA256SUMS, names.Platform{}, nil
	case names.ProviderSignature:
		if name != names.ProviderSignatureName(p.Type, version) {
			return 0, names.Platform{}, badPath("unknown signature file %q", name)
		}
		return ArchiveSignature, names.Platform{}, nil
	}
	return 0, names.Platform{}, badPath("unknown file %q", name)
}

// archivePath is the escaped path (below the archive prefix) of a file.
func archivePath(p names.Provider, v names.Version, index digest.Digest, file string) string {
	return strings.Join([]string{
		url.PathEscape(p.Hostname), p.Namespace, p.Type, url.PathEscape(v.String()), index.Encoded(), url.PathEscape(file),
	}, "/")
}

func parseModule(ns, name, system string) (names.Module, error) {
	m, err := names.ParseModule(ns, name, system)
	if err != nil {
		return names.Module{}, badPath("%v", err)
	}
	return m, nil
}

// ModuleRequest is a parsed Module Registry Protocol path:
// :namespace/:name/:system/versions or
// :namespace/:name/:system/:version/download.
type ModuleRequest struct {
	Module names.Module
	// Download is false for the versions listing.
	Download bool
	Version  names.Version
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
// filename is names.ModuleZipName's. The manifest digest pins the URL to
// the exact package whose download answer handed it out.
type ModuleArchiveRequest struct {
	Module   names.Module
	Version  names.Version
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
	if seg[5] != names.ModuleZipName(m, r.Version) {
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

// moduleArchivePath is the escaped path (below the module archive prefix)
// of a module package.
func moduleArchivePath(m names.Module, v names.Version, manifest digest.Digest) string {
	return strings.Join([]string{
		m.Namespace, m.Name, m.System, url.PathEscape(v.String()), manifest.Encoded(), url.PathEscape(names.ModuleZipName(m, v)),
	}, "/")
}

// TofuDownloadRequest is a parsed TofuDL download path below
// /tofu/download/: v:version/:artifact.
type TofuDownloadRequest struct {
	Version  names.Version
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
	v, err := names.ParseTofuVersion(vs)
	if err != nil {
		return TofuDownloadRequest{}, badPath("%v", err)
	}
	if !names.ValidTofuArtifact(seg[1]) {
		return TofuDownloadRequest{}, badPath("invalid artifact name %q", seg[1])
	}
	return TofuDownloadRequest{Version: v, Artifact: seg[1]}, nil
}
