package proxy

import (
	"context"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/source"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/modules"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/page"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/providers"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/tofudl"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Mounting: each protocol family's handlers, reading from the source
// stack sources.go composes, under their paths.

// mountProviders adds the network mirror, the registry protocol
// (providers.v1) and the archive downloads, with pull-through the files
// of releases being pulled, and the page's SBOM views.
func (s *Server) mountProviders(mappings store.ProviderMappings) {
	o := s.opts
	src := s.providerSource(mappings)
	h := providers.New(s.out, src, o.Signer, cache.Options{Name: "generated_checksums", FailureTTL: o.Store.FailureTTL,
		MaxEntries: o.Store.CacheEntries, MaxCost: budgetOf(o).generated, EntryCost: store.EntryCost, Timeout: o.Store.Timeout, Observe: s.metrics.ObserveCache})
	s.providers = h
	if s.pull.Providers() {
		s.Mount("", providers.PullPrefix, "pull", http.HandlerFunc(h.ServePull))
	}
	s.Mount("", providers.MirrorPrefix, "mirror", s.Authenticate(http.HandlerFunc(h.ServeMirror)))
	s.Mount("providers.v1", providers.ProvidersPath, "providers", s.Authenticate(http.HandlerFunc(h.ServeRegistry)))
	s.Mount("", providers.ArchivePrefix, "archives", http.HandlerFunc(h.ServeArchive))
	// The page's SBOM views, through the same source, with the same
	// client authentication as the metadata.
	s.Mount("", providers.SBOMPrefix, "sbom", s.Authenticate(&providers.SBOMs{Out: s.out, Source: src, Vulns: o.VulnDB, Render: page.RenderSBOM}))
}

// mountModules adds modules.v1 and the module archive downloads, for the
// module mappings in order.
func (s *Server) mountModules(tpls []*repotemplate.Template) {
	m := modules.New(s.out, s.moduleSource(tpls, ownModules))
	s.Mount("modules.v1", modules.ModulesPath, "modules", s.Authenticate(http.HandlerFunc(m.ServeRegistry)))
	s.Mount("", modules.ModuleArchivePrefix, "module_archives", http.HandlerFunc(m.ServeArchive))
}

// mountModuleOrigins serves the modules of each origin module registry
// under its own paths.
func (s *Server) mountModuleOrigins(tpls []*repotemplate.Template) {
	if !s.pull.Modules() {
		return
	}
	for _, host := range s.pull.ModuleOrigins() {
		m := modules.ForOrigin(s.out, s.moduleSource(tpls, host), host)
		registry, archives := m.Paths()
		s.Mount("", registry, "modules", s.Authenticate(http.HandlerFunc(m.ServeRegistry)))
		s.Mount("", archives, "module_archives", http.HandlerFunc(m.ServeArchive))
	}
}

// mountTofu adds the TofuDL mirror for the releases in ref, served from
// their source stack (tofuSource, sources.go).
func (s *Server) mountTofu(ref oci.Reference) {
	t := tofudl.New(s.out, s.tofuSource(ref))
	s.Mount("", tofudl.APIPath, "tofu_api", s.Authenticate(http.HandlerFunc(t.ServeAPI)))
	s.Mount("", tofudl.DownloadPrefix, "tofu_download", s.Authenticate(http.HandlerFunc(t.ServeDownload)))
}

// newPage is the page for people, showing the server's configuration
// and what it served; with a shared store (a sharedstate.Board) its
// record is shared with the fleet's other replicas.
func (s *Server) newPage() *page.Page {
	o := &s.opts
	cfg := page.Config{Version: o.Version, PublicURL: o.PublicURL, RegistryHostname: o.RegistryHostname,
		Providers: pageMappings(s.mappings), Modules: o.ModuleMappings, Tofu: o.TofuRepository, Minimal: s.clientAuth,
		ModuleOrigins: s.pull.ModuleOrigins(), Policy: o.Policy, PolicyStatus: o.PolicyStatus, VulnDB: o.VulnDB, Log: s.log, Caller: s.callerSummary}
	if s.events != nil {
		cfg.Deliveries = s.events.deliveries
	}
	if patterns := s.pull.OwnModulePatterns(); len(patterns) > 0 {
		cfg.OwnModules = &page.OwnModules{Origin: s.pull.ModuleOrigin(), Patterns: patterns}
	}
	p := page.New(cfg)
	if b, ok := o.Shared.(sharedstate.Board); ok && o.Shared.Shared() {
		p.Share(b)
	}
	return p
}

// routePage serves the page at "/" (exactly) and at the mirror's base
// URL (the network mirror protocol leaves that URL to the server).
func (s *Server) routePage(providers bool) {
	h := s.instrument("page", s.page)
	s.mux.Handle("/{$}", h)
	if providers {
		s.mux.Handle(MirrorPrefix+"{$}", h)
	}
	// Everything else: the protocols' JSON error form, counted under one
	// label whatever the path.
	s.mux.Handle("/", s.instrument("unknown", http.HandlerFunc(page.ServeUnknownPath)))
}

// pageMappings are the provider mappings as the page shows them.
func pageMappings(ms store.ProviderMappings) []page.ProviderMapping {
	var out []page.ProviderMapping
	for _, m := range ms {
		out = append(out, page.ProviderMapping{Template: m.Template.String(), Include: m.Include, Exclude: m.Exclude, Label: m.Label})
	}
	return out
}

// mountCatalog serves the catalogue of the modules the mappings hold,
// the providers and the OpenTofu releases (catalog.Prefix), with the
// same client authentication as the protocols.
func (s *Server) mountCatalog(tpls []*repotemplate.Template) {
	h := &catalog.Handlers{Out: s.out, Modules: s.catalogModuleSource(tpls), Docs: catalogDocs{source.NewModuleDocs("")},
		Held:        func(ctx context.Context, host string) (catalog.Held, error) { return s.held(ctx, tpls, host) },
		RenderIndex: page.RenderCatalogIndex, RenderModule: page.RenderModule,
		RenderProvider: page.RenderProvider, SBOMPath: providers.SBOMPath, Facts: s.catalogFacts(),
		RenderProviderDoc: page.RenderProviderDoc, RenderProviderDocCategory: page.RenderProviderDocCategory}
	if len(s.mappings) > 0 {
		h.Providers = s.catalogProviderSource(s.mappings)
	}
	if ref := s.opts.TofuRepository; ref != nil {
		h.Tofu, h.RenderTofu, h.TofuAPI, h.TofuDownload = s.catalogTofuSource(*ref), page.RenderTofu, tofudl.APIPath, tofudl.DownloadPrefix
	}
	s.catalog = h
	s.Mount("", catalog.Prefix, "catalog", s.AuthenticatePeople(h))
}

// catalogDocs reads module interfaces for the catalogue.
type catalogDocs struct{ docs *source.ModuleDocs }

func (d catalogDocs) ModuleDoc(ctx context.Context, root source.Root) (*moduledoc.Doc, string, error) {
	md, err := d.docs.Read(ctx, root)
	if err != nil {
		return nil, "", err
	}
	if md.Extracted {
		return md.Doc, catalog.HowExtracted, nil
	}
	return md.Doc, catalog.HowStored, nil
}

// SearchModule is what a search reads of a package's interface.
func (d catalogDocs) SearchModule(ctx context.Context, root source.Root) (*source.Searched, error) {
	return d.docs.SearchModule(ctx, root)
}

// held is what the module templates tpls and the provider mappings
// hold, the two listed at once (each a few sequential catalog pages).
func (s *Server) held(ctx context.Context, tpls []*repotemplate.Template, host string) (catalog.Held, error) {
	var modules, providers catalog.Held
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		modules, err = heldModules(gctx, s.store, tpls, host)
		return err
	})
	if len(s.mappings) > 0 {
		g.Go(func() (err error) {
			providers, err = heldProviders(gctx, s.store, s.mappings, host, catalog.Held{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return catalog.Held{}, err
	}
	modules.Providers = providers.Providers
	modules.Coverage = append(modules.Coverage, providers.Coverage...)
	return modules, nil
}

// heldModules are the modules the repositories of tpls hold: each
// repository a template matches, under the hostname it names, or host
// where the template has no ${hostname}.
func heldModules(ctx context.Context, st *store.Store, tpls []*repotemplate.Template, host string) (catalog.Held, error) {
	var out catalog.Held
	for _, tpl := range tpls {
		h, err := st.Held(ctx, tpl)
		if err != nil {
			return catalog.Held{}, err
		}
		out.Coverage = append(out.Coverage, catalog.Coverage{Template: tpl.String(), Listed: h.CanList, Reason: h.Reason})
		for _, v := range h.Values {
			m, err := names.ParseModule(v["namespace"], v["name"], v["system"])
			if err != nil {
				continue // Match validates: not reached
			}
			a := source.ModuleAddress{Host: host, Module: m}
			if hn, ok := v["hostname"]; ok {
				a.Host = hn
			}
			out.Modules = append(out.Modules, a)
		}
	}
	return out, nil
}

// heldProviders adds to out the providers the repositories of ms hold:
// each repository a mapping's template matches, under the hostname it
// names or host, when that mapping covers the address
// (store.ProviderMappings.Index on the mapping alone, as the protocols'
// sources decide). A template that cannot be listed (an oci_mirror
// block's) is a Coverage not Listed.
func heldProviders(ctx context.Context, st *store.Store, ms store.ProviderMappings, host string, out catalog.Held) (catalog.Held, error) {
	for _, mp := range ms {
		tpl, ok := mp.Template.(*repotemplate.Template)
		if !ok {
			out.Coverage = append(out.Coverage, catalog.Coverage{Template: mp.Template.String(), Reason: "an oci_mirror template is not listed"})
			continue
		}
		h, err := st.Held(ctx, tpl)
		if err != nil {
			return catalog.Held{}, err
		}
		out.Coverage = append(out.Coverage, catalog.Coverage{Template: tpl.String(), Listed: h.CanList, Reason: h.Reason})
		for _, v := range h.Values {
			hn := host
			if x, ok := v["hostname"]; ok {
				hn = x
			}
			p, err := names.ParseProvider(hn + "/" + v["namespace"] + "/" + v["type"])
			if err != nil || (store.ProviderMappings{mp}).Index(p) != 0 {
				continue
			}
			out.Providers = append(out.Providers, p)
		}
	}
	return out, nil
}
