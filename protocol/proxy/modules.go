package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Module Registry Protocol paths.
const (
	ModulesPath         = "/v1/modules/"
	ModuleArchivePrefix = "/v1/module-archives/"
)

// modules serves the Module Registry Protocol from module packages
// (oci-tofu push module, or any tool writing OpenTofu's modulepkg) in the
// repositories a template maps module addresses to.
type modules struct {
	s        *responder
	template *oci.Template
}

// mountModules adds modules.v1 and the module archive downloads.
func (s *Server) mountModules(tpl *oci.Template) {
	m := &modules{s: s.out, template: tpl}
	s.Mount("modules.v1", ModulesPath, "modules", s.Authenticate(http.HandlerFunc(m.serveRegistry)))
	s.Mount("", ModuleArchivePrefix, "module_archives", http.HandlerFunc(m.serveArchive))
}

// repo is the repository a module maps to.
func (m *modules) repo(host string, mod names.Module) (*store.Repo, error) {
	ref, err := m.template.Expand(mod.TemplateValues(host))
	if err != nil {
		return nil, notFound("module %s has no repository here: %v", mod, err)
	}
	return m.s.store.Repo(ref), nil
}

// repoFor is the repository of the module a request names, for the host
// it was sent to (also returned); ok is false when the request has been
// answered.
func (m *modules) repoFor(w http.ResponseWriter, r *http.Request, mod names.Module) (*store.Repo, string, bool) {
	host, ok := m.s.hostname(w, r)
	if !ok {
		return nil, "", false
	}
	repo, err := m.repo(host, mod)
	if err != nil {
		m.s.fail(w, r, err)
		return nil, "", false
	}
	return repo, host, true
}

// serveRegistry answers :namespace/:name/:system/versions and
// :namespace/:name/:system/:version/download.
func (m *modules) serveRegistry(w http.ResponseWriter, r *http.Request) {
	s := m.s
	host, ok := s.hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := readDocRequest(s, w, r, host+" ", ModulesPath, ParseModulePath)
	if !ok {
		return
	}
	repo, err := m.repo(host, req.Module)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !req.Download {
		s.serveDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
			return m.versionsDoc(ctx, repo, req.Module)
		})
		return
	}
	m.serveDownload(w, r, repo, req)
}

// versionsDoc lists the versions whose tags hold a module package; others
// are left out and logged.
func (m *modules) versionsDoc(ctx context.Context, repo *store.Repo, mod names.Module) (any, time.Time, error) {
	l, err := repo.Versions(ctx)
	if err != nil {
		return nil, l.At, missing(err, "module "+mod.String(), "unknown module %s", mod)
	}
	ok := make([]bool, len(l.Versions))
	err = m.s.store.EachVersion(ctx, l.Versions, func(ctx context.Context, i int, v names.Version) error {
		if _, bad := l.Unresolvable[v.String()]; bad {
			return nil
		}
		_, _, err := repo.Module(ctx, names.TagForVersion(v))
		if err != nil && store.FailureOf(err) == oci.FailureInvalid {
			m.s.log.LogAttrs(ctx, slog.LevelWarn, "module version left out: not a module package",
				slog.String("module", mod.String()), slog.String("version", v.String()), slog.Any("error", err))
		}
		ok[i] = err == nil
		return keepFatal(err)
	})
	if err != nil {
		return nil, l.At, err
	}
	list := wire.ModuleVersionList{Versions: []wire.ModuleVersion{}}
	var listed []string
	for i, v := range l.Versions {
		if ok[i] {
			list.Versions = append(list.Versions, wire.ModuleVersion{Version: v.String()})
			listed = append(listed, v.String())
		}
	}
	m.s.seen.moduleListed(mod.String(), listed)
	if len(list.Versions) == 0 {
		return nil, l.At, notFound("module %s has no versions holding a module package", mod)
	}
	return wire.ModuleVersions{Modules: []wire.ModuleVersionList{list}}, l.At, nil
}

// serveDownload answers 204 with X-Terraform-Get naming the zip by
// manifest digest: the exact package, whatever the tag names later.
func (m *modules) serveDownload(w http.ResponseWriter, r *http.Request, repo *store.Repo, req ModuleRequest) {
	manifest, _, err := repo.Module(r.Context(), names.TagForVersion(req.Version))
	if err != nil {
		m.s.fail(w, r, missing(err, "module "+req.Module.String(), "module %s has no version %s", req.Module, req.Version))
		return
	}
	base, err := m.s.baseFor(r)
	if err != nil {
		m.s.fail(w, r, err)
		return
	}
	loc := base + strings.TrimPrefix(m.s.fileRef(ModuleArchivePrefix, moduleArchivePath(req.Module, req.Version, manifest.Digest)), baseMark)
	h := w.Header()
	h.Set("X-Terraform-Get", loc)
	h.Set("Content-Length", "0")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// serveArchive streams the zip of the module package a download answer
// named, by manifest digest, verifying the zip's digest as it streams.
func (m *modules) serveArchive(w http.ResponseWriter, r *http.Request) {
	s := m.s
	req, ok := signedRequest(s, w, r, ModuleArchivePrefix, ParseModuleArchivePath)
	if !ok {
		return
	}
	repo, _, ok := m.repoFor(w, r, req.Module)
	if !ok {
		return
	}
	zip, err := repo.ModuleAt(r.Context(), req.Manifest)
	if err != nil {
		s.fail(w, r, missing(err, "module "+req.Module.String(), "module %s has no package with manifest %s", req.Module, req.Manifest))
		return
	}
	s.serveBlob(w, r, repo, zip, blobFile{name: names.ModuleZipName(req.Module, req.Version), contentType: "application/zip", pinned: true})
}
