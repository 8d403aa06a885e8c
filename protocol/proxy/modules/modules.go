package modules

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Module Registry Protocol paths.
const (
	ModulesPath         = "/v1/modules/"
	ModuleArchivePrefix = "/v1/module-archives/"
)

// Handlers serve the Module Registry Protocol for one set of
// paths (the proxy's own, or an origin's: module_origins.go), rendering
// what their source answers (composed by moduleSource, sources.go).
type Handlers struct {
	*respond.Responder
	source source.Modules
	// origin, paths: module_origins.go (origin "": the request's host).
	origin string
	paths  modulePaths
}

// New is the module handlers of the modules addressed under the proxy's
// own hostname, answering with out from src.
func New(out *respond.Responder, src source.Modules) *Handlers {
	return &Handlers{Responder: out, source: src, paths: ownModulePaths}
}

// ServeRegistry answers :namespace/:name/:system/versions and
// :namespace/:name/:system/:version/download.
func (m *Handlers) ServeRegistry(w http.ResponseWriter, r *http.Request) {
	host, ok := m.hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := respond.ReadDocRequest(m.Responder, w, r, host+" ", m.paths.registry, ParseModulePath)
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
// when it can be read as a module package the rules admit (others are
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
	if len(list.Versions) == 0 {
		if refused > 0 {
			return nil, l.At, source.NotFoundf("module %s has no version served here: %d denied by the admission policy, the others hold no admitted module package", a.Module, refused)
		}
		return nil, l.At, source.NotFoundf("module %s has no versions holding a module package", a.Module)
	}
	return wire.ModuleVersions{Modules: []wire.ModuleVersionList{list}}, l.At, nil
}

// serveDownload answers 204 with X-Terraform-Get naming the zip by
// manifest digest: the exact package, whatever the tag names later; to
// OpenTofu 1.12 and later, the same URL unsigned as a direct location
// fetched with the client's credentials (module_direct.go).
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
	loc := base + strings.TrimPrefix(m.FileRef(m.paths.archives, archive), respond.BaseMark)
	h := w.Header()
	h.Set("X-Terraform-Get", loc)
	h.Set("Content-Length", "0")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// ServeArchive streams the zip of the module package a download answer
// named, by manifest digest, verifying the zip's digest as it streams.
func (m *Handlers) ServeArchive(w http.ResponseWriter, r *http.Request) {
	req, ok := respond.SignedRequest(m.Responder, w, r, m.paths.archives, ParseModuleArchivePath)
	if !ok {
		return
	}
	host, ok := m.hostname(w, r)
	if !ok {
		return
	}
	blob, err := m.source.OpenModule(r.Context(), source.ModuleAddress{Host: host, Module: req.Module}, req.Version, req.Manifest)
	if err != nil {
		m.Fail(w, r, err)
		return
	}
	m.Deliver(w, r, blob)
}
