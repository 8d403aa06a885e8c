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

var (
	_ gate.Judge   = policyJudge{}
	_ source.Rules = policyJudge{}
)

// The source stacks, composed once here: what the registry holds (held),
// with pull-through what origins offer (pulled), several mappings merged
// as OpenTofu merges its oci_mirror blocks (merged), and the policy file
// with the attestation rule over each (gate). Handlers see only the
// interfaces of package source.

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

// tofuSource is the OpenTofu releases' stack: gate(pulled(held)) with
// TofuDL pull-through, gate(held) without. The attestation rule is not
// applied with pull-through, which would otherwise list and pull from
// the origin the releases it refuses (docs/proxy.md).
func (s *Server) tofuSource(ref oci.Reference) source.Tofu {
	judge := s.out.judge()
	h := &held.Tofu{Repo: s.store.Repo(ref), Log: s.log}
	var src source.Tofu = h
	if s.pull.Tofu() {
		src = &pulled.Tofu{Held: h, Engine: s.pull, Rules: judge, Log: s.log}
	}
	return &gate.Tofu{Inner: src, Judge: judge, Attested: !s.pull.Tofu()}
}
