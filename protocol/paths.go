package protocol

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Provider is a provider address: hostname/namespace/type, lower-cased as
// OpenTofu normalises it.
type Provider struct {
	Hostname, Namespace, Type string
}

func (p Provider) String() string { return p.Hostname + "/" + p.Namespace + "/" + p.Type }

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

var (
	// nameRE is a namespace or type as OpenTofu accepts it: letters,
	// digits and single hyphens inside.
	nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// hostnameRE is a DNS name (IDNs arrive in punycode) with an optional port.
	hostnameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)
)

func parseName(what, s string) (string, error) {
	s = strings.ToLower(s)
	if len(s) > 64 || !nameRE.MatchString(s) {
		return "", badPath("invalid provider %s %q", what, s)
	}
	return s, nil
}

func parseHostname(s string) (string, error) {
	s = strings.ToLower(s)
	if len(s) > 255 || !hostnameRE.MatchString(s) {
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
	v, err := oci.ParseVersion(s)
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
	Platform oci.Platform
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

func parsePlatform(os, arch string) (oci.Platform, error) {
	if len(os) > 32 || len(arch) > 32 || strings.Contains(os, "_") || strings.Contains(arch, "_") {
		return oci.Platform{}, badPath("invalid platform %q/%q", os, arch)
	}
	p, err := oci.ParsePlatform(os + "_" + arch)
	if err != nil {
		return oci.Platform{}, badPath("%v", err)
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
	Platform oci.Platform
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
	f, err := convert.ParseProviderFilename(seg[5])
	if err != nil {
		return ArchiveRequest{}, badPath("%v", err)
	}
	if f.Type != p.Type || f.Version != seg[3] {
		return ArchiveRequest{}, badPath("file %q does not belong to %s %s", seg[5], p, seg[3])
	}
	switch f.Kind {
	case convert.ProviderZip:
		r.File, r.Platform = ArchiveZip, f.Platform
	case convert.ProviderSHA256SUMS:
		r.File = ArchiveSHA256SUMS
	case convert.ProviderSignature:
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
func zipName(typ string, v versions.Version, p oci.Platform) string {
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
