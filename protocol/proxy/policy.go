package proxy

import (
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// The policy file (Options.Policy, convert/policy; the
// policy in force is read once per decision, so a reload takes effect at
// the next one): unlike the
// attestation check it needs the address and version, not the content, so
// the held provider source asks it before the store reads anything, where
// it reads releases (release, releaseAt), lists them (listedVersion,
// networkMirrorIndex) and hands out platforms; the module source and the
// held OpenTofu release source ask it where they read and list releases.
// No handler knows of it. Without a policy every question is answered
// "allowed" with nothing read.

// policyDenial is the 404 for version v of address (of a policy kind,
// what naming it for clients) the policy denies, with its reason, or nil.
func (s *responder) policyDenial(kind names.Kind, address, what string, v names.Version) error {
	d := s.decide(kind, address, &v) // policy_metrics.go: counted
	if d.Allow {
		return nil
	}
	return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, d.Reason), Rule: d.Rule, Reason: d.Reason, AgesIn: d.AgesIn}
}

// policyAllowed are the versions of address the policy allows, the others
// logged; without a policy, vs. The policy in force when it is called
// judges every version of vs.
func (s *responder) policyAllowed(kind names.Kind, address string, vs []names.Version) []names.Version {
	pol, gen := s.opts.Policy.CurrentWithGeneration() // one policy for the whole list
	if pol == nil {
		return vs
	}
	out := make([]names.Version, 0, len(vs))
	for _, v := range vs {
		d := s.decideWith(pol, gen, kind, address, &v)
		if !d.Allow {
			s.log.Info("version left out by the policy", "kind", kind, "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
			continue
		}
		out = append(out, v)
	}
	return out
}

// platformRefusal is the 404 for a platform the policy leaves out, or nil.
func (h *responder) platformRefusal(p names.Provider, v names.Version, pl names.Platform) error {
	pol := h.opts.Policy.Current()
	if pol == nil {
		return nil
	}
	d := platformDecision(pol, p, pl)
	if d.Allow {
		return nil
	}
	return &source.Denied{Msg: fmt.Sprintf("provider %s %s is not served for %s: %s", p, v, pl, d.Reason), Rule: d.Rule, Reason: d.Reason}
}

// platformDecision is pol's word on platform pl of provider p.
func platformDecision(pol *policy.Policy, p names.Provider, pl names.Platform) policy.Decision {
	return pol.Platform(policy.KindProvider, p.String(), pl.String())
}

// policyDenials are the versions of vs the policy denies for address,
// with why, as one policy in force judges them all (logged); nil without
// a policy.
func (s *responder) policyDenials(kind names.Kind, address, what string, vs []names.Version) map[string]error {
	pol, gen := s.opts.Policy.CurrentWithGeneration()
	if pol == nil {
		return nil
	}
	out := map[string]error{}
	for _, v := range vs {
		d := s.decideWith(pol, gen, kind, address, &v)
		if !d.Allow {
			s.log.Info("version left out by the policy", "kind", string(kind), "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
			out[v.String()] = &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, d.Reason), Rule: d.Rule, Reason: d.Reason, AgesIn: d.AgesIn}
		}
	}
	return out
}
