package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
	"github.com/oci-tofu/oci-tofu/protocol/source/held"
	"github.com/oci-tofu/oci-tofu/protocol/source/merged"
	"github.com/oci-tofu/oci-tofu/protocol/source/pulled"
	"github.com/oci-tofu/oci-tofu/protocol/store"
	"github.com/opencontainers/go-digest"
)

// The source stacks, composed once at start-up and nowhere else:
// handlers see only package source. A mapping is what the registry holds
// (held), with pull-through for the first mapping (of those covering a
// provider address; pulled); each mapping is gated by the policy file
// and the attestation rule (gate), so that a copy one mapping may not
// serve is passed over for the next mapping's; several mappings are
// merged, the first serving a version winning (merged); a wrapper with
// nothing to do is left out (one mapping is not merged; with no policy
// file and no attestation rule the gates judge with gate.Open). The gate
// decides with gate.Policy (judge, below), the proxy supplying only what
// is outside the gate's concern; it explains its decisions
// (ExplainPolicy, below) over the held sources of the same mappings.

// judge is the gate's judge and pull-through's rules: the policy file
// and the attestation rule (gate.Policy), with what the proxy supplies:
// the store's reads, the clock, who is trusted for ingest times, and
// the counting of decisions and the page's record of denials
// (respond.Responder.CountDecision, and through it the page), and of what
// the vulnerability database found (respond.Metrics.NoteVulnerable).
func (s *Server) judge() *gate.Policy {
	o := &s.opts
	j := &gate.Policy{Live: o.Policy, Now: o.Now, Each: s.store.Each, Log: s.log, Trusted: o.ingestTrust(), Vulns: o.VulnDB,
		Observe: s.out.CountDecision, Vulnerable: s.metrics.NoteVulnerable}
	if s.events != nil { // a request without events pays nothing for them
		j.Observe = s.observeDecision
	}
	if o.admitting() {
		j.Admitted = gate.StoreAdmitted
	}
	return j
}

// observeDecision counts a policy decision and records a denial for the
// page (respond.Responder.CountDecision), and sends the event of a
// denial or a warning (events.go).
func (s *Server) observeDecision(d source.Decision) {
	s.out.CountDecision(d)
	s.events.decided(d)
}

// rules are what the gates judge with and pull-through's rules:
// gate.Open when there is nothing to judge (no policy file and no
// attestation rule), so that nothing is asked of the policy; the judge
// otherwise.
func (s *Server) rules() judgeRules {
	if s.opts.Policy == nil && !s.opts.admitting() {
		return gate.Open{}
	}
	return s.judge()
}

// judgeRules judge for the gate and rule for pull-through.
type judgeRules interface {
	gate.Judge
	source.Rules
}

// admitting reports whether the options configure an attestation rule.
func (o *Options) admitting() bool {
	return len(o.RequireAttestation) > 0 || len(o.RequireTrust) > 0 || o.RequireKeyless != nil
}

// admission is the store's attestation rule (Options.RequireAttestation,
// RequireTrust, RequireKeyless): the gate's (gate.Admission).
func admission(keys []*attest.Verifier, trusts []attest.Checker, keyless attest.BundleChecker) store.Admit {
	return gate.Admission(keys, trusts, keyless)
}

// ingestTrust is who, besides the policy's attestation: keys and
// keyless: identities, is trusted to say when a release entered the
// registry: --require-attestation's keys, pull-through's attester's key
// and --require-keyless's identities.
func (o *Options) ingestTrust() attest.IngestTrust {
	var t attest.IngestTrust
	t.Keys = append(t.Keys, o.RequireAttestation...)
	if pt := o.PullThrough; pt != nil && pt.Attest != nil && pt.Attest.Attester != nil {
		t.Keys = append(t.Keys, pt.Attest.Attester.Key())
	}
	if o.RequireKeyless != nil {
		t.Bundles = append(t.Bundles, o.RequireKeyless)
	}
	return t
}

// providerSource is the providers' stack: merged(gate(pulled(held m0)),
// gate(pulled(held m1)), …) with pull-through, where for each address
// the first mapping covering it pulls through (pull-through stores into
// it) and later mappings serve what they hold; merged(gate(held m0),
// gate(held m1), …) without. Each mapping's releases are judged by their
// own roots.
func (s *Server) providerSource(mappings store.ProviderMappings) source.Providers {
	judge := s.rules()
	pulls := s.pull.Providers()
	hs := make([]*held.Providers, len(mappings))
	for i, mp := range mappings {
		hs[i] = &held.Providers{Store: s.store, Mappings: store.ProviderMappings{mp}, Log: s.log}
	}
	m := &merged.Providers{Pulls: pulls}
	for i, h := range hs {
		var src source.Providers = h
		if pulls {
			src = &pulled.Providers{Held: h, Store: s.store, Engine: s.pull, Rules: judge, Log: s.log,
				Pulls: func(p names.Provider) bool { return mappings.Index(p) == i },
				Later: func(p names.Provider) []pulled.LaterRepo { return laterRepos(hs[i+1:], p) }}
		}
		m.Mappings = append(m.Mappings, merged.ProviderMapping{Source: &gate.Providers{Inner: src, Judge: judge, Each: s.store.EachVersion}, Covers: h.Covers})
	}
	if len(m.Mappings) == 1 {
		return m.Mappings[0].Source
	}
	if pulls {
		m.Outage = func(p names.Provider, via names.Via, err error) string {
			return pulled.Degraded(s.pull, p, via, err)
		}
	}
	return m
}

// laterRepos are the repositories of the mappings of hs covering p.
func laterRepos(hs []*held.Providers, p names.Provider) []pulled.LaterRepo {
	var out []pulled.LaterRepo
	for _, h := range hs {
		if repo, err := h.Repo(p); err == nil {
			out = append(out, pulled.LaterRepo{Repo: repo, Mapping: h.Mappings[0]})
		}
	}
	return out
}

// laterModuleRepos are the repositories of the module mappings of hs
// that have one for a.
func laterModuleRepos(hs []*held.Modules, a source.ModuleAddress) []pulled.LaterModuleRepo {
	var out []pulled.LaterModuleRepo
	for _, h := range hs {
		if repo, err := h.Repo(a); err == nil {
			out = append(out, pulled.LaterModuleRepo{Repo: repo, Template: h.Template})
		}
	}
	return out
}

// ownModules names the modules addressed under the proxy's own hostname
// to moduleSource, rather than an origin's.
const ownModules = ""

// moduleSource is the source of the modules tpls map, for origin
// registry host origin's paths (modules.ForOrigin) or the proxy's own
// (ownModules): merged(gate(pulled(held m0)), gate(held m1), …). With
// module pull-through the first mapping pulls from origin, or for the
// proxy's own modules from the first origin, as --pull-through-own-modules
// allows.
func (s *Server) moduleSource(tpls []*repotemplate.Template, origin string) source.Modules {
	judge := s.rules()
	pulls := s.pull.Modules()
	mappings := make([]source.Modules, len(tpls))
	hs := make([]*held.Modules, len(tpls))
	for i, tpl := range tpls {
		hs[i] = &held.Modules{Template: tpl, Store: s.store, Log: s.log}
	}
	for i, h := range hs {
		var src source.Modules = h
		if i == 0 && pulls {
			later := hs[1:]
			p := &pulled.Modules{Held: h, Engine: s.pull, Origin: origin, Rules: judge, Log: s.log,
				Later: func(a source.ModuleAddress) []pulled.LaterModuleRepo { return laterModuleRepos(later, a) }}
			if origin == ownModules {
				p.Origin, p.Own = s.pull.ModuleOrigin(), true
			}
			src = p
		}
		mappings[i] = &gate.Modules{Inner: src, Judge: judge}
	}
	if len(mappings) == 1 && !pulls {
		return mappings[0]
	}
	m := &merged.Modules{Mappings: mappings, Pulls: pulls, Log: s.log}
	if pulls {
		from := origin
		if from == ownModules {
			from = s.pull.ModuleOrigin()
		}
		m.Outage = func(a source.ModuleAddress, err error) {
			s.pull.DegradedListing(names.KindModule, from+"/"+a.Module.String(), err)
		}
	}
	return m
}

// tofuSource is the source of the OpenTofu releases in ref:
// gate(pulled(held)) with TofuDL pull-through, gate(held) without, the
// attestation rule applied only without (pull-through would defeat it:
// it would list and pull from the origin the releases the rule refuses;
// docs/proxy.md).
func (s *Server) tofuSource(ref oci.Reference) source.Tofu {
	judge := s.rules()
	h := &held.Tofu{Repo: s.store.Repo(ref), Log: s.log}
	var src source.Tofu = h
	if s.pull.Tofu() {
		src = &pulled.Tofu{Held: h, Repo: h.Repo, Engine: s.pull, Rules: judge, Log: s.log}
	}
	return &gate.Tofu{Inner: src, Judge: judge, Attested: !s.pull.Tofu()}
}

// PolicyVerdict is the policy's decision on one version of an address,
// as the server makes it when a client asks (`oci-tofu policy test`
// against the registry): the gate's (gate.Verdict), its Admission the
// word of serve's admission rule (Options.RequireAttestation,
// RequireTrust, RequireKeyless).
type PolicyVerdict = gate.Verdict

// AdmissionVerdict is the admission rule's word on a release: admitted,
// or the refusal's reason (what serve logs and tells clients).
type AdmissionVerdict = gate.AdmissionVerdict

// ExplainPolicy decides on version of address (of a policy kind:
// provider, module "host/namespace/name/system", tofu) — or, when version
// is "", on every version the repositories it maps to hold — as the gate
// decides when serving, recorded (gate.Policy.Explain): the policy in
// force, the facts the gate reads for a rule with min_age or signers, by
// the server's clock, and the admission rule where serve asks it. The
// releases are those of the held sources of the server's mappings that
// cover the address, in order (heldFor). err is a registry failure or an
// address the server does not map.
func (s *Server) ExplainPolicy(ctx context.Context, kind names.Kind, address, version string) ([]PolicyVerdict, error) {
	attested := kind != names.KindTofu || !s.pull.Tofu() // as tofuSource's gate.Tofu.Attested
	return s.judge().Explain(ctx, kind, address, version, attested, func() ([]gate.Held, error) {
		return s.heldFor(kind, address)
	})
}

// heldFor are the held sources of the mappings serving an address of a
// kind, in the order the server tries them.
func (s *Server) heldFor(kind names.Kind, address string) ([]gate.Held, error) {
	switch kind {
	case names.KindProvider:
		p, err := names.ParseProvider(address)
		if err != nil {
			return nil, err
		}
		return s.heldProviders(p)
	case names.KindModule:
		return s.heldModules(address)
	case names.KindTofu:
		if s.opts.TofuRepository == nil {
			return nil, errors.New("the server has no OpenTofu release repository (--tofu-repository)")
		}
		h := &held.Tofu{Repo: s.store.Repo(*s.opts.TofuRepository), Log: s.log}
		return []gate.Held{gate.HeldTofu(h.Repo, h)}, nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// storedVersionsOf are the versions the mappings serving an address of
// a kind hold, oldest first (heldFor; gate.HeldVersions): what the
// reload events judge (events_reload.go).
func (s *Server) storedVersionsOf(ctx context.Context, kind names.Kind, address string) ([]names.Version, error) {
	held, err := s.heldFor(kind, address)
	if err != nil {
		return nil, err
	}
	return gate.HeldVersions(ctx, held)
}

// heldProviders are p's held sources: of every mapping covering it,
// in order, as providerSource merges them.
func (s *Server) heldProviders(p names.Provider) ([]gate.Held, error) {
	if len(s.mappings) == 0 {
		return nil, errors.New("the server maps no providers (no --provider-template or --config)")
	}
	var out []gate.Held
	for _, mp := range s.mappings {
		h := &held.Providers{Store: s.store, Mappings: store.ProviderMappings{mp}, Log: s.log}
		if repo, err := h.Repo(p); err == nil {
			out = append(out, gate.HeldProvider(repo, h, p))
		}
	}
	if len(out) == 0 {
		all := &held.Providers{Store: s.store, Mappings: s.mappings, Log: s.log}
		_, err := all.Repo(p) // its error says why
		return nil, err
	}
	return out, nil
}

// heldModules are a module's held sources in the module templates, as
// moduleSource composes them.
func (s *Server) heldModules(address string) ([]gate.Held, error) {
	parts := strings.Split(address, "/")
	if len(s.opts.ModuleMappings) == 0 || len(parts) != 4 {
		return nil, fmt.Errorf("module %s: the server maps no modules, or the address is not host/namespace/name/system", address)
	}
	mod, err := names.ParseModule(parts[1], parts[2], parts[3])
	if err != nil {
		return nil, err
	}
	a := source.ModuleAddress{Host: parts[0], Module: mod}
	var out []gate.Held
	for _, tpl := range s.opts.ModuleMappings {
		h := &held.Modules{Template: tpl, Store: s.store, Log: s.log}
		if repo, err := h.Repo(a); err == nil {
			out = append(out, gate.HeldModule(repo, h, a))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("module %s has no repository here", address)
	}
	return out, nil
}

// catalogModuleSource is the source of the catalogue's modules: what each
// mapping holds, gated by the policy as the protocol's source is, merged
// in the mappings' order; nothing is pulled through (a page view never
// reaches an origin).
func (s *Server) catalogModuleSource(tpls []*repotemplate.Template) source.Modules {
	judge := s.rules()
	mappings := make([]source.Modules, len(tpls))
	for i, tpl := range tpls {
		var h source.Modules = &held.Modules{Template: tpl, Store: s.store, Log: s.log}
		if !strings.Contains(tpl.String(), "${hostname}") {
			h = ownHostModules{h}
		}
		mappings[i] = &gate.Modules{Inner: h, Judge: judge}
	}
	if len(mappings) == 1 {
		return mappings[0]
	}
	return &merged.Modules{Mappings: mappings, Log: s.log}
}

// ownHostModules are the modules of a template without ${hostname} as
// the catalogue reads them: such a template maps every host's address to
// one repository, so only addresses under the request's own registry
// hostname (catalog.OwnHost) are looked up, those of another host are
// not mapped. Otherwise a page's path could show the proxy's modules
// under any host: with snippets whose source is on that host, under the
// policy rules and client scopes of that host.
type ownHostModules struct{ source.Modules }

func (m ownHostModules) mapped(ctx context.Context, a source.ModuleAddress) error {
	if own, ok := catalog.OwnHost(ctx); ok && a.Host == own {
		return nil
	}
	return source.MarkNotMapped(source.NotFoundf("module %s has no repository here", a))
}

func (m ownHostModules) ModuleVersions(ctx context.Context, a source.ModuleAddress) (source.ModuleListing, error) {
	if err := m.mapped(ctx, a); err != nil {
		return source.ModuleListing{}, err
	}
	return m.Modules.ModuleVersions(ctx, a)
}

func (m ownHostModules) ModuleRelease(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	if err := m.mapped(ctx, a); err != nil {
		return nil, err
	}
	return m.Modules.ModuleRelease(ctx, a, v)
}

func (m ownHostModules) FetchModule(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	if err := m.mapped(ctx, a); err != nil {
		return nil, err
	}
	return m.Modules.FetchModule(ctx, a, v)
}

func (m ownHostModules) OpenModule(ctx context.Context, a source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	if err := m.mapped(ctx, a); err != nil {
		return nil, err
	}
	return m.Modules.OpenModule(ctx, a, v, manifest)
}

// catalogProviderSource is the source of the catalogue's providers: what
// each mapping holds, gated by the policy as the protocols' source is,
// merged in the mappings' order; nothing is pulled through.
func (s *Server) catalogProviderSource(mappings store.ProviderMappings) source.Providers {
	judge := s.rules()
	m := &merged.Providers{}
	for _, mp := range mappings {
		h := &held.Providers{Store: s.store, Mappings: store.ProviderMappings{mp}, Log: s.log}
		m.Mappings = append(m.Mappings, merged.ProviderMapping{Source: &gate.Providers{Inner: h, Judge: judge, Each: s.store.EachVersion}, Covers: h.Covers})
	}
	if len(m.Mappings) == 1 {
		return m.Mappings[0].Source
	}
	return m
}

// catalogTofuSource is the source of the catalogue's OpenTofu releases:
// what ref holds, gated as TofuDL's source is (the attestation rule
// applied as tofuSource applies it), nothing pulled through.
func (s *Server) catalogTofuSource(ref oci.Reference) source.Tofu {
	h := &held.Tofu{Repo: s.store.Repo(ref), Log: s.log}
	return &gate.Tofu{Inner: h, Judge: s.rules(), Attested: !s.pull.Tofu()}
}
