// Package modules serves the Module Registry Protocol (modules.v1): the
// modules addressed under the proxy's own hostname and, with module
// pull-through, each origin registry's under its own paths; download
// answers name the exact package by manifest digest, and the archives
// stream verified. It renders what its source.Modules answers and answers
// through respond.
package modules

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/opencontainers/go-digest"
)

// Module Registry Protocol paths.
const (
	ModulesPath         = "/v1/modules/"
	ModuleArchivePrefix = "/v1/module-archives/"
)

// Handlers serve the Module Registry Protocol for one set of
// paths (the proxy's own, or an origin's: origins.go), rendering
// what their source answers (composed by the server: proxy/sources.go).
type Handlers struct {
	*respond.Responder
	source source.Modules
	// origin, paths: origins.go (origin "": the request's host).
	origin string
	paths  modulePaths
}

// New is the module handlers of the modules addressed under the proxy's
// own hostname, answering with out from src.
func New(out *respond.Responder, src source.Modules) *Handlers {
	return &Handlers{Responder: out, source: src, paths: ownModulePaths}
}

// hostname is the registry hostname of the modules a request names: the
// origin's for an origin's paths, else the request's (an invalid Host is
// answered; ok is false).
func (m *Handlers) hostname(w http.ResponseWriter, r *http.Request) (string, bool) {
	if m.origin != "" {
		return m.origin, true
	}
	return m.Responder.Hostname(w, r)
}

// ServeRegistry answers :namespace/:name/:system/versions and
// :namespace/:name/:system/:version/download.
func (m *Handlers) ServeRegistry(w http.ResponseWriter, r *http.Request) {
	host, ok := m.hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := respond.ReadDocRequest(m.Responder, w, r, host+" ", m.paths.registry, ParseModulePath, func(req ModuleRequest) (names.Kind, string) {
		return names.KindModule, host + "/" + req.Module.String()
	})
	if !ok {
		return
	}
	a := source.ModuleAddress{Host: host, Module: req.Module}
	if !req.Download {
		m.ServeDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
			return m.versionsDoc(ctx, a)
		})
		return
	}
	m.serveDownload(w, r, a, req.Version)
}

// versionsDoc lists the versions the source serves: each it stores,
// when it can be read as a module package the rules accept (others are
// left out and logged), and each an origin offers. The versions are
// oldest first.
func (m *Handlers) versionsDoc(ctx context.Context, a source.ModuleAddress) (any, time.Time, error) {
	l, err := m.source.ModuleVersions(ctx, a)
	if err != nil {
		return nil, l.At, err
	}
	vs := make(names.VersionList, len(l.Versions))
	for i, e := range l.Versions {
		vs[i] = e.Version
	}
	served := make([]bool, len(vs))
	denied := make([]bool, len(vs))
	err = m.Store.EachVersion(ctx, vs, func(ctx context.Context, i int, v names.Version) error {
		if !l.Versions[i].Stored { // offered by an origin: nothing to read yet
			served[i] = true
			return nil
		}
		_, err := m.source.ModuleRelease(ctx, a, v)
		var d *source.Denied
		served[i], denied[i] = err == nil, errors.As(err, &d) && d.Rule != source.AttestationRule // each index by one goroutine
		return m.LeftOut(a.What(), v, err)
	})
	if err != nil {
		return nil, l.At, err
	}
	var listed names.VersionList
	refused := len(l.Denied)
	for i, v := range vs {
		if served[i] {
			listed = append(listed, v)
		}
		if denied[i] {
			refused++
		}
	}
	listed.Sort()
	list := wire.ModuleVersionList{Versions: []wire.ModuleVersion{}}
	ids := make([]string, len(listed))
	for i, v := range listed {
		list.Versions = append(list.Versions, wire.ModuleVersion{Version: v.String()})
		ids[i] = v.String()
	}
	m.Observer.ModuleListed(a.Module.String(), ids)
	// The Module Registry Protocol has no word for a deprecation that
	// OpenTofu or Terraform shows (docs/policy.md): the page alone does.
	m.Observer.Deprecations(names.KindModule, a.Module.String(), listed, l.Deprecated)
	if len(list.Versions) == 0 {
		if refused > 0 {
			return nil, l.At, source.NotFoundf("module %s has no version served here: %d denied by the policy, the others hold no admitted module package", a.Module, refused)
		}
		return nil, l.At, source.NotFoundf("module %s has no versions holding a module package", a.Module)
	}
	return wire.ModuleVersions{Modules: []wire.ModuleVersionList{list}}, l.At, nil
}

// serveDownload answers 204 with X-Terraform-Get naming the zip by
// manifest digest: the exact package, whatever the tag names later; to
// OpenTofu 1.12 and later, the same URL unsigned as a direct location
// fetched with the client's credentials (serveDirectLocation).
func (m *Handlers) serveDownload(w http.ResponseWriter, r *http.Request, a source.ModuleAddress, v names.Version) {
	rel, err := m.source.FetchModule(r.Context(), a, v)
	if err != nil {
		m.Fail(w, r, err)
		return
	}
	base, err := m.BaseFor(r)
	if err != nil {
		m.Fail(w, r, err)
		return
	}
	archive := moduleArchivePath(a.Module, v, rel.Root.Digest)
	if fetchesModulesDirectly(r) {
		serveDirectLocation(w, r, base+m.paths.archives+archive)
		return
	}
	loc := m.LocationOf(r, base, m.FileRef(m.paths.archives, archive))
	h := w.Header()
	h.Set("X-Terraform-Get", loc)
	h.Set("Content-Length", "0")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// ServeArchive streams the zip of the module package a download answer
// named, by manifest digest, verifying the zip's digest as it streams.
func (m *Handlers) ServeArchive(w http.ResponseWriter, r *http.Request) {
	host, ok := m.hostname(w, r)
	if !ok {
		return
	}
	req, ok := respond.SignedRequest(m.Responder, w, r, m.paths.archives, ParseModuleArchivePath, func(req ModuleArchiveRequest) (names.Kind, string) {
		return names.KindModule, host + "/" + req.Module.String()
	})
	if !ok {
		return
	}
	respond.EventOf(r.Context()).Serving(respond.Artifact{Kind: names.KindModule, Address: host + "/" + req.Module.String(), Version: req.Version.String(), File: "package"})
	blob, err := m.source.OpenModule(r.Context(), source.ModuleAddress{Host: host, Module: req.Module}, req.Version, req.Manifest)
	if err != nil {
		m.Fail(w, r, err)
		return
	}
	m.Deliver(w, r, blob)
}

// Module downloads for clients that fetch the package themselves
// (docs/reference.md §6): OpenTofu 1.12 and later read the download
// answer's use_registry_credentials and then fetch its location directly,
// sending the credentials they hold for the proxy's host. They get the
// archive's plain URL, authorised by their bearer token as every other
// request is; Terraform and older tofu hand the location to go-getter,
// which sends no credentials, so they get X-Terraform-Get with a signed
// URL when client authentication is on.

// fetchesModulesDirectly reports whether the client is OpenTofu 1.12 or
// later, by its User-Agent ("OpenTofu/1.12.6", maybe followed by what
// TF_APPEND_USER_AGENT adds).
func fetchesModulesDirectly(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.Header.Get("User-Agent"), "OpenTofu/")
	if !ok {
		return false
	}
	v, err := names.ParseVersionLoose(strings.Fields(rest + " ")[0])
	if err != nil {
		return false
	}
	return v.Major > 1 || v.Major == 1 && v.Minor >= 12
}

// serveDirectLocation answers the download endpoint for a client that
// fetches the package itself, with its credentials for this host.
func serveDirectLocation(w http.ResponseWriter, r *http.Request, loc string) {
	yes := true
	w.Header().Set("Cache-Control", "no-store")
	respond.WriteJSON(w, r, wire.ModuleLocation{Location: loc, UseRegistryCredentials: &yes})
}

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
