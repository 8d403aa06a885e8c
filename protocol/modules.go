package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Module Registry Protocol paths.
const (
	ModulesPath          = "/v1/modules/"
	ModuleArchivePrefix  = "/v1/module-archives/"
	moduleDownloadToZips = "../../../../../module-archives/" // from …/:ns/:name/:system/:version/download
)

// modules serves the Module Registry Protocol from module packages
// (oci-tofu push module, or any tool writing OpenTofu's modulepkg) in the
// repositories a template maps module addresses to.
type modules struct {
	s        *Server
	template *oci.Template

	repos    *cache[oci.ReadOnlyRepository] // by repository name, TTL
	tags     *cache[versions.List]          // by repository name, TTL
	resolved *cache[ocispec.Descriptor]     // by repository name + tag, TTL
	zips     *cache[ocispec.Descriptor]     // by repository name + manifest digest
}

// mountModules adds modules.v1 and the module archive downloads.
func (s *Server) mountModules(tpl *oci.Template) {
	n, ttl := s.opts.CacheEntries, s.opts.TagTTL
	m := &modules{
		s: s, template: tpl,
		repos:    newCache[oci.ReadOnlyRepository]("module_repositories", n, ttl, s.metrics),
		tags:     newCache[versions.List]("module_tags", n, ttl, s.metrics),
		resolved: newCache[ocispec.Descriptor]("module_resolve", n, ttl, s.metrics),
		zips:     newCache[ocispec.Descriptor]("module_manifests", n, 0, s.metrics),
	}
	s.Mount("modules.v1", ModulesPath, "modules", s.Authenticate(http.HandlerFunc(m.serveRegistry)))
	s.Mount("", ModuleArchivePrefix, "module_archives", http.HandlerFunc(m.serveArchive))
}

// repository opens the repository a module maps to.
func (m *modules) repository(ctx context.Context, host string, mod Module) (oci.ReadOnlyRepository, string, error) {
	ref, err := m.template.Expand(map[string]string{"hostname": host, "namespace": mod.Namespace, "name": mod.Name, "system": mod.System})
	if err != nil {
		return nil, "", notFound("module %s has no repository here: %v", mod, err)
	}
	name := ref.Name()
	repo, err := m.repos.do(ctx, name, m.s.opts.UpstreamTimeout, func(ctx context.Context) (oci.ReadOnlyRepository, error) {
		return m.s.opts.Client.OpenReadOnly(ctx, ref)
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, "", notFound("unknown module %s", mod)
		}
		return nil, "", m.s.src.upstream(err, "opening the module's repository")
	}
	return repo, name, nil
}

// versions lists a module's canonical version tags.
func (m *modules) versions(ctx context.Context, repo oci.ReadOnlyRepository, name string, mod Module) (versions.List, error) {
	list, err := listVersions(ctx, m.tags, m.s.opts.UpstreamTimeout, repo, name)
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, notFound("unknown module %s", mod)
		}
		return nil, m.s.src.upstream(err, "listing the module's versions")
	}
	if len(list) == 0 {
		return nil, notFound("module %s has no versions", mod)
	}
	return list, nil
}

// pkg resolves a version tag to its module manifest and zip layer.
func (m *modules) pkg(ctx context.Context, repo oci.ReadOnlyRepository, name string, mod Module, v versions.Version) (manifest, zip ocispec.Descriptor, err error) {
	tag := names.TagForVersion(v)
	manifest, err = m.resolved.do(ctx, name+":"+tag, m.s.opts.UpstreamTimeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return repo.Resolve(ctx, tag)
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return manifest, zip, notFound("module %s has no version %s", mod, v)
		}
		return manifest, zip, m.s.src.upstream(err, "resolving the version's tag")
	}
	zip, err = m.zip(ctx, repo, name, manifest)
	return manifest, zip, err
}

// zip reads a module manifest (OpenTofu's checks) for its zip layer.
func (m *modules) zip(ctx context.Context, repo oci.ReadOnlyRepository, name string, manifest ocispec.Descriptor) (ocispec.Descriptor, error) {
	zip, err := m.zips.do(ctx, name+"@"+manifest.Digest.String(), m.s.opts.UpstreamTimeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return oci.ReadModule(ctx, repo, manifest)
	})
	if err != nil {
		return zip, m.s.src.upstream(err, "reading the module's manifest")
	}
	return zip, nil
}

type moduleVersion struct {
	Version string `json:"version"`
}

type moduleVersions struct {
	Modules []struct {
		Versions []moduleVersion `json:"versions"`
	} `json:"modules"`
}

// serveRegistry answers :namespace/:name/:system/versions and
// :namespace/:name/:system/:version/download.
func (m *modules) serveRegistry(w http.ResponseWriter, r *http.Request) {
	s := m.s
	if !allowRead(w, r) {
		return
	}
	req, err := ParseModulePath(strings.TrimPrefix(r.URL.EscapedPath(), ModulesPath))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	host, err := s.registryHostname(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	repo, name, err := m.repository(ctx, host, req.Module)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !req.Download {
		m.serveVersions(w, r, repo, name, req.Module)
		return
	}
	manifest, _, err := m.pkg(ctx, repo, name, req.Module, req.Version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := moduleArchivePath(req.Module, req.Version, manifest.Digest)
	loc := moduleDownloadToZips + p
	if s.urls != nil {
		loc += "?" + s.urls.sign(ModuleArchivePrefix+p)
	}
	h := w.Header()
	h.Set("X-Terraform-Get", loc)
	h.Set("Content-Length", "0")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// serveVersions lists the versions whose tags hold a module package;
// others are left out and logged.
func (m *modules) serveVersions(w http.ResponseWriter, r *http.Request, repo oci.ReadOnlyRepository, name string, mod Module) {
	ctx := r.Context()
	list, err := m.versions(ctx, repo, name, mod)
	if err != nil {
		m.s.fail(w, r, err)
		return
	}
	ok := make([]bool, len(list))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, v := range list {
		g.Go(func() error {
			_, _, err := m.pkg(gctx, repo, name, mod, v)
			var he *httpError
			switch {
			case err == nil:
				ok[i] = true
			case errors.As(err, &he) && he.status == http.StatusNotFound:
				// tag removed since listing
			case errors.Is(err, oci.ErrInvalidArtifact):
				m.s.log.LogAttrs(ctx, slog.LevelWarn, "module version left out: not a module package",
					slog.String("module", mod.String()), slog.String("version", v.String()), slog.Any("error", err))
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		m.s.fail(w, r, err)
		return
	}
	var doc moduleVersions
	doc.Modules = make([]struct {
		Versions []moduleVersion `json:"versions"`
	}, 1)
	doc.Modules[0].Versions = []moduleVersion{}
	for i, v := range list {
		if ok[i] {
			doc.Modules[0].Versions = append(doc.Modules[0].Versions, moduleVersion{Version: v.String()})
		}
	}
	if len(doc.Modules[0].Versions) == 0 {
		m.s.fail(w, r, notFound("module %s has no versions holding a module package", mod))
		return
	}
	writeJSON(w, r, doc)
}

// serveArchive streams the zip of the module package a download answer
// named, by manifest digest, verifying the zip's digest as it streams.
func (m *modules) serveArchive(w http.ResponseWriter, r *http.Request) {
	s := m.s
	rest, ok := s.archivePath(w, r, ModuleArchivePrefix)
	if !ok {
		return
	}
	req, err := ParseModuleArchivePath(rest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	host, err := s.registryHostname(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	repo, name, err := m.repository(ctx, host, req.Module)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	manifest, err := m.manifestAt(ctx, repo, name, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	zip, err := m.zip(ctx, repo, name, manifest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.streamZip(w, r, &release{repo: repo, repoName: name}, zip, moduleZipName(req.Module, req.Version))
}

// manifestAt resolves a module manifest by digest: the exact package the
// download answer described, whatever its tag holds now.
func (m *modules) manifestAt(ctx context.Context, repo oci.ReadOnlyRepository, name string, req ModuleArchiveRequest) (ocispec.Descriptor, error) {
	want := req.Manifest
	desc, err := m.resolved.do(ctx, name+"@"+want.String(), m.s.opts.UpstreamTimeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return repo.Resolve(ctx, want.String())
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return desc, notFound("module %s has no package with manifest %s", req.Module, want)
		}
		return desc, m.s.src.upstream(err, "resolving the module's manifest")
	}
	if desc.Digest != want {
		return desc, m.s.src.upstream(fmt.Errorf("%w: asked for %s, got %s", oci.ErrInvalidArtifact, want, desc.Digest), "resolving the module's manifest")
	}
	return desc, nil
}
