package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/held"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Module Registry Protocol paths.
const (
	ModulesPath         = "/v1/modules/"
	ModuleArchivePrefix = "/v1/module-archives/"
)

// modules serves the Module Registry Protocol from module packages
// (oci-tofu push module, or any tool writing OpenTofu's modulepkg) in the
// repositories templates map module addresses to, merged when several
// admit one address (merged_modules.go), through a source: what the
// registry holds (heldModules), or for the first mapping with
// pull-through also what the origin offers (pulledModules,
// pulled_modules.go).
type modules struct {
	s         *responder
	templates []*oci.Template // in order; pull-through stores into the first
	held      *heldModules
	src       moduleSource // the first mapping's
	pulls     bool         // src pulls through
	// origin, paths: module_origins.go (origin "": the request's host).
	origin string
	paths  modulePaths
}

// moduleSource lists a module's versions and reads the package a version
// names; handlers never know whether it is pulled through.
type moduleSource interface {
	versionsDoc(ctx context.Context, repo *store.Repo, host string, mod names.Module) (any, time.Time, error)
	release(ctx context.Context, repo *store.Repo, host string, mod names.Module, v names.Version) (ocispec.Descriptor, error)
}

// heldModules is the moduleSource of what the registry holds.
type heldModules struct {
	s *responder
}

// mountModules adds modules.v1 and the module archive downloads, for the
// module mappings in order.
func (s *Server) mountModules(tpls []*oci.Template) {
	held := &heldModules{s: s.out}
	m := &modules{s: s.out, templates: tpls, held: held, src: held, paths: ownModulePaths}
	if s.pull.Modules() {
		m.src, m.pulls = &pulledModules{heldModules: held, engine: s.pull, origin: s.pull.ModuleOrigin(), own: true}, true
	}
	s.Mount("modules.v1", ModulesPath, "modules", s.Authenticate(http.HandlerFunc(m.serveRegistry)))
	s.Mount("", ModuleArchivePrefix, "module_archives", http.HandlerFunc(m.serveArchive))
}

// reposFor are the repositories of the module a request names, for the
// host it was sent to (also returned); ok is false when the request has
// been answered.
func (m *modules) reposFor(w http.ResponseWriter, r *http.Request, mod names.Module) (moduleRepos, string, bool) {
	host, ok := m.hostname(w, r)
	if !ok {
		return moduleRepos{}, "", false
	}
	mr, err := m.reposOf(host, mod)
	if err != nil {
		m.s.fail(w, r, err)
		return moduleRepos{}, "", false
	}
	return mr, host, true
}

// serveRegistry answers :namespace/:name/:system/versions and
// :namespace/:name/:system/:version/download.
func (m *modules) serveRegistry(w http.ResponseWriter, r *http.Request) {
	s := m.s
	host, ok := m.hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := readDocRequest(s, w, r, host+" ", m.paths.registry, ParseModulePath)
	if !ok {
		return
	}
	mr, err := m.reposOf(host, req.Module) // merged_modules.go
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !req.Download {
		s.serveDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
			return m.versionsDoc(ctx, mr, host, req.Module)
		})
		return
	}
	m.serveDownload(w, r, mr, host, req)
}

// versionsDoc lists the versions whose tags hold a module package the
// rules admit (policy.go, admission.go); others are left out and logged.
func (m *heldModules) versionsDoc(ctx context.Context, repo *store.Repo, host string, mod names.Module) (any, time.Time, error) {
	l, err := repo.Versions(ctx)
	if err != nil {
		return nil, l.At, source.Missing(err, "module "+mod.String(), "unknown module %s", mod)
	}
	vs := m.s.policyAllowed(policy.KindModule, moduleAddress(host, mod), l.Versions)
	refused := len(l.Versions) - len(vs)
	ok := make([]bool, len(vs))
	denied := make([]bool, len(vs))
	err = m.s.store.EachVersion(ctx, vs, func(ctx context.Context, i int, v names.Version) (err error) {
		ok[i], denied[i], err = m.listable(ctx, repo, l, host, mod, v) // each index by one goroutine
		return held.KeepFatal(err)
	})
	if err != nil {
		return nil, l.At, err
	}
	list := wire.ModuleVersionList{Versions: []wire.ModuleVersion{}}
	var listed []string
	for i, v := range vs {
		if ok[i] {
			list.Versions = append(list.Versions, wire.ModuleVersion{Version: v.String()})
			listed = append(listed, v.String())
		}
	}
	m.s.seen.moduleListed(mod.String(), listed)
	refused += len(slices.DeleteFunc(denied, func(d bool) bool { return !d }))
	if len(list.Versions) == 0 {
		if refused > 0 {
			return nil, l.At, source.NotFoundf("module %s has no version served here: %d denied by the admission policy, the others hold no admitted module package", mod, refused)
		}
		return nil, l.At, source.NotFoundf("module %s has no versions holding a module package", mod)
	}
	return wire.ModuleVersions{Modules: []wire.ModuleVersionList{list}}, l.At, nil
}

// listable says whether version v of a listing holds a module package the
// rules admit; denied is set when the policy's min_age or signers deny it
// (policy_facts.go).
func (m *heldModules) listable(ctx context.Context, repo *store.Repo, l store.Listing, host string, mod names.Module, v names.Version) (ok, denied bool, err error) {
	if _, bad := l.Unresolvable[v.String()]; bad {
		return false, false, nil
	}
	manifest, _, err := repo.Module(ctx, names.TagForVersion(v))
	if err != nil && store.FailureOf(err) == oci.FailureInvalid {
		m.s.log.LogAttrs(ctx, slog.LevelWarn, "module version left out: not a module package",
			slog.String("module", mod.String()), slog.String("version", v.String()), slog.Any("error", err))
	}
	if err != nil {
		return false, false, err
	}
	refused, err := m.s.refusedInListing(ctx, repo, store.KindModule, mod.String(), v, manifest.Digest)
	if err != nil || refused {
		return false, false, err
	}
	warn, err := m.s.factsWarning(ctx, policy.KindModule, moduleAddress(host, mod), v, releaseRoot{repo: repo, subject: manifest.Digest})
	return err == nil && warn == "", warn != "", err
}

// moduleAddress is a module's address as the policy matches it.
func moduleAddress(host string, mod names.Module) string {
	return host + "/" + mod.String()
}

// release reads the module package version v's tag names, when the
// policy and the attestation rule admit it (404 naming why otherwise).
func (m *heldModules) release(ctx context.Context, repo *store.Repo, host string, mod names.Module, v names.Version) (manifest ocispec.Descriptor, err error) {
	if err := m.s.policyDenial(policy.KindModule, moduleAddress(host, mod), "module "+mod.String(), v); err != nil { // policy.go
		return manifest, err
	}
	manifest, _, err = repo.Module(ctx, names.TagForVersion(v))
	if err != nil {
		return manifest, source.MarkNotHeld(source.Missing(err, "module "+mod.String(), "module %s has no version %s", mod, v))
	}
	if err := m.s.factsDenial(ctx, policy.KindModule, moduleAddress(host, mod), "module "+mod.String(), v, releaseRoot{repo: repo, subject: manifest.Digest}); err != nil { // policy_facts.go
		return manifest, err
	}
	return manifest, admitted(ctx, repo, store.KindModule, "module "+mod.String(), v, manifest.Digest) // admission.go
}

// releaseAt reads the zip of the module package with a given manifest
// digest, as archive URLs name it, when the rules admit it.
func (m *heldModules) releaseAt(ctx context.Context, repo *store.Repo, host string, mod names.Module, v names.Version, manifest digest.Digest) (ocispec.Descriptor, error) {
	if err := m.s.policyDenial(policy.KindModule, moduleAddress(host, mod), "module "+mod.String(), v); err != nil {
		return ocispec.Descriptor{}, err
	}
	zip, err := repo.ModuleAt(ctx, names.TagForVersion(v), manifest)
	if err != nil {
		return zip, source.Missing(err, "module "+mod.String(), "module %s has no package with manifest %s", mod, manifest)
	}
	if err := m.s.factsDenial(ctx, policy.KindModule, moduleAddress(host, mod), "module "+mod.String(), v, releaseRoot{repo: repo, subject: manifest}); err != nil {
		return zip, err
	}
	return zip, admitted(ctx, repo, store.KindModule, "module "+mod.String(), v, manifest)
}

// serveDownload answers 204 with X-Terraform-Get naming the zip by
// manifest digest: the exact package, whatever the tag names later; to
// OpenTofu 1.12 and later, the same URL unsigned as a direct location
// fetched with the client's credentials (module_direct.go).
func (m *modules) serveDownload(w http.ResponseWriter, r *http.Request, mr moduleRepos, host string, req ModuleRequest) {
	manifest, err := m.release(r.Context(), mr, host, req.Module, req.Version)
	if err != nil {
		m.s.fail(w, r, err)
		return
	}
	base, err := m.s.baseFor(r)
	if err != nil {
		m.s.fail(w, r, err)
		return
	}
	archive := moduleArchivePath(req.Module, req.Version, manifest.Digest)
	if fetchesModulesDirectly(r) { // module_direct.go
		serveDirectLocation(w, r, base+m.paths.archives+archive)
		return
	}
	loc := base + strings.TrimPrefix(m.s.fileRef(m.paths.archives, archive), baseMark)
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
	req, ok := signedRequest(s, w, r, m.paths.archives, ParseModuleArchivePath)
	if !ok {
		return
	}
	mr, host, ok := m.reposFor(w, r, req.Module)
	if !ok {
		return
	}
	zip, repo, err := m.releaseAt(r.Context(), mr, host, req.Module, req.Version, req.Manifest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.serveBlob(w, r, repo, zip, blobFile{name: names.ModuleZipName(req.Module, req.Version), contentType: "application/zip", pinned: true})
}
