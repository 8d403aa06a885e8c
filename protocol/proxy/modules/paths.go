package modules

import (
	"net/url"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// The Module Registry Protocol's paths, and the module archive URLs.

func parseModule(ns, name, system string) (names.Module, error) {
	m, err := names.ParseModule(ns, name, system)
	if err != nil {
		return names.Module{}, respond.BadPath("%v", err)
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
		return ModuleRequest{}, respond.BadPath("want :namespace/:name/:system/versions or :namespace/:name/:system/:version/download")
	}
	seg, err := respond.SplitPath(escaped, n)
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
			return ModuleRequest{}, respond.BadPath("want :namespace/:name/:system/versions")
		}
		return r, nil
	}
	if seg[4] != "download" {
		return ModuleRequest{}, respond.BadPath("want :namespace/:name/:system/:version/download")
	}
	r.Download = true
	if r.Version, err = respond.ParseVersion(seg[3]); err != nil {
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
	seg, err := respond.SplitPath(escaped, 6)
	if err != nil {
		return ModuleArchiveRequest{}, err
	}
	m, err := parseModule(seg[0], seg[1], seg[2])
	if err != nil {
		return ModuleArchiveRequest{}, err
	}
	r := ModuleArchiveRequest{Module: m}
	if r.Version, err = respond.ParseVersion(seg[3]); err != nil {
		return ModuleArchiveRequest{}, err
	}
	if r.Manifest, err = respond.ParseHexDigest(seg[4]); err != nil {
		return ModuleArchiveRequest{}, err
	}
	if seg[5] != names.ModuleZipName(m, r.Version) {
		return ModuleArchiveRequest{}, respond.BadPath("file %q does not belong to module %s %s", seg[5], m, r.Version)
	}
	return r, nil
}

// moduleArchivePath is the escaped path (below the module archive prefix)
// of a module package.
func moduleArchivePath(m names.Module, v names.Version, manifest digest.Digest) string {
	return strings.Join([]string{
		m.Namespace, m.Name, m.System, url.PathEscape(v.String()), manifest.Encoded(), url.PathEscape(names.ModuleZipName(m, v)),
	}, "/")
}
