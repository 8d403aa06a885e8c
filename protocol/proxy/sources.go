package proxy

import (
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
	"github.com/oci-tofu/oci-tofu/protocol/source/held"
	"github.com/oci-tofu/oci-tofu/protocol/source/merged"
	"github.com/oci-tofu/oci-tofu/protocol/source/pulled"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The source stacks, composed once at start-up and nowhere else:
// handlers see only package source. A mapping is what the registry holds
// (held), with pull-through for the first mapping (pulled); each mapping
// is gated by the policy file and the attestation rule (gate), so that a
// copy one mapping may not serve is passed over for the next mapping's;
// several mappings are merged, the first serving a version winning
// (merged).

var (
	_ gate.Judge   = policyJudge{}
	_ source.Rules = policyJudge{}
)

// providerSource is the providers' stack: gate(pulled(held)) with
// pull-through, which stores into the first mapping admitting an
// address; without, merged(gate(held m0), gate(held m1), …), each
// mapping's releases judged by their own roots.
func (s *Server) providerSource(mappings store.ProviderMappings) source.Providers {
	judge := s.out.judge()
	gated := func(inner source.Providers) source.Providers {
		return &gate.Providers{Inner: inner, Judge: judge, Each: s.store.EachVersion}
	}
	all := &held.Providers{Store: s.store, Mappings: mappings, Log: s.log}
	s.providerRepo, s.providerMappings = all.Repo, mappings
	switch {
	case s.pull.Providers():
		return gated(&pulled.Providers{Held: all, Engine: s.pull, Rules: judge, Log: s.log})
	case len(mappings) == 1:
		return gated(all)
	}
	m := &merged.Providers{}
	for _, mp := range mappings {
		h := &held.Providers{Store: s.store, Mappings: store.ProviderMappings{mp}, Log: s.log}
		m.Mappings = append(m.Mappings, merged.ProviderMapping{Source: gated(h), Admits: h.Admits})
	}
	return m
}

// ownModules names the modules addressed under the proxy's own hostname
// to moduleSource, rather than an origin's.
const ownModules = ""

// moduleSource is the source of the modules tpls map, for origin
// registry host origin's paths (module_origins.go) or the proxy's own
// (ownModules): merged(gate(pulled(held m0)), gate(held m1), …). With
// module pull-through the first mapping pulls from origin, or for the
// proxy's own modules from the first origin, as --pull-through-own-modules
// allows.
func (s *Server) moduleSource(tpls []*oci.Template, origin string) source.Modules {
	judge := s.out.judge()
	pulls := s.pull.Modules()
	mappings := make([]source.Modules, len(tpls))
	for i, tpl := range tpls {
		h := &held.Modules{Template: tpl, Store: s.store, Log: s.log}
		var src source.Modules = h
		if i == 0 && pulls {
			p := &pulled.Modules{Held: h, Engine: s.pull, Origin: origin, Rules: judge, Log: s.log}
			if origin == ownModules {
				p.Origin, p.Own = s.pull.ModuleOrigin(), true
			}
			src = p
		}
		mappings[i] = &gate.Modules{Inner: src, Judge: judge}
	}
	m := &merged.Modules{Mappings: mappings, Pulls: pulls, Log: s.log}
	if pulls {
		from := origin
		if from == ownModules {
			from = s.pull.ModuleOrigin()
		}
		m.Outage = func(a source.ModuleAddress, err error) {
			s.pull.DegradedListing("module", from+"/"+a.Module.String(), err)
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
	judge := s.out.judge()
	h := &held.Tofu{Repo: s.store.Repo(ref), Log: s.log}
	var src source.Tofu = h
	if s.pull.Tofu() {
		src = &pulled.Tofu{Held: h, Engine: s.pull, Rules: judge, Log: s.log}
	}
	return &gate.Tofu{Inner: src, Judge: judge, Attested: !s.pull.Tofu()}
}
