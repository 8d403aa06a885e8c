package providers

import (
	"net/url"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// The Provider Network Mirror and Provider Registry Protocols' paths, and
// the archive and pull URLs their documents hand out.

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
	seg, err := respond.SplitPath(escaped, 4)
	if err != nil {
		return MirrorRequest{}, err
	}
	p, err := respond.ParseProvider(seg[0], seg[1], seg[2])
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
		return MirrorRequest{}, respond.BadPath("want index.json or <version>.json, got %q", seg[3])
	}
	if r.Version, err = respond.ParseVersion(vs); err != nil {
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
		return RegistryRequest{}, respond.BadPath("want :namespace/:type/versions or :namespace/:type/:version/download/:os/:arch")
	}
	seg, err := respond.SplitPath(escaped, n)
	if err != nil {
		return RegistryRequest{}, err
	}
	var r RegistryRequest
	if r.Namespace, err = respond.ParseName("namespace", seg[0]); err != nil {
		return r, err
	}
	if r.Type, err = respond.ParseName("type", seg[1]); err != nil {
		return r, err
	}
	if n == 3 {
		if seg[2] != "versions" {
			return RegistryRequest{}, respond.BadPath("want :namespace/:type/versions")
		}
		return r, nil
	}
	if seg[3] != "download" {
		return RegistryRequest{}, respond.BadPath("want :namespace/:type/:version/download/:os/:arch")
	}
	r.Download = true
	if r.Version, err = respond.ParseVersion(seg[2]); err != nil {
		return RegistryRequest{}, err
	}
	if r.Platform, err = parsePlatform(seg[4], seg[5]); err != nil {
		return RegistryRequest{}, err
	}
	return r, nil
}

func parsePlatform(os, arch string) (names.Platform, error) {
	if strings.Contains(os, "_") || strings.Contains(arch, "_") {
		return names.Platform{}, respond.BadPath("invalid platform %q/%q", os, arch)
	}
	p, err := names.ParsePlatform(os + "_" + arch)
	if err != nil {
		return names.Platform{}, respond.BadPath("%v", err)
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
	seg, err := respond.SplitPath(escaped, 6)
	if err != nil {
		return ArchiveRequest{}, err
	}
	p, err := respond.ParseProvider(seg[0], seg[1], seg[2])
	if err != nil {
		return ArchiveRequest{}, err
	}
	r := ArchiveRequest{Provider: p}
	if r.Version, err = respond.ParseVersion(seg[3]); err != nil {
		return ArchiveRequest{}, err
	}
	if r.Index, err = respond.ParseHexDigest(seg[4]); err != nil {
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
		return 0, names.Platform{}, respond.BadPath("%v", err)
	}
	if f.Type != p.Type || f.Version != version {
		return 0, names.Platform{}, respond.BadPath("file %q does not belong to %s %s", name, p, version)
	}
	switch f.Kind {
	case names.ProviderZip:
		return ArchiveZip, f.Platform, nil
	case names.ProviderSHA256SUMS:
		return ArchiveSHA256SUMS, names.Platform{}, nil
	case names.ProviderSignature:
		if name != names.ProviderSignatureName(p.Type, version) {
			return 0, names.Platform{}, respond.BadPath("unknown signature file %q", name)
		}
		return ArchiveSignature, names.Platform{}, nil
	}
	return 0, names.Platform{}, respond.BadPath("unknown file %q", name)
}

// archivePath is the escaped path (below the archive prefix) of a file.
func archivePath(p names.Provider, v names.Version, index digest.Digest, file string) string {
	return strings.Join([]string{
		url.PathEscape(p.Hostname), p.Namespace, p.Type, url.PathEscape(v.String()), index.Encoded(), url.PathEscape(file),
	}, "/")
}
