package proxy

import (
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

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

// policyWarning is the versions document's word on a version the policy
// denies ("" when it allows it).
func (h *heldProviders) policyWarning(p names.Provider, v names.Version) string {
	d := h.decide(policy.KindProvider, p.String(), &v)
	if d.Allow {
		return ""
	}
	return fmt.Sprintf("%s is left out: %s", v, d.Reason)
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

// allowedPlatforms are the platforms of ps the policy allows.
func (h *responder) allowedPlatforms(p names.Provider, ps []names.Platform) []names.Platform {
	pol := h.opts.Policy.Current()
	if pol == nil {
		return ps
	}
	out := make([]names.Platform, 0, len(ps))
	for _, pl := range ps {
		if platformDecision(pol, p, pl).Allow {
			out = append(out, pl)
		}
	}
	return out
}

// allowedZips are the zips of the platforms the policy allows.
func (h *responder) allowedZips(p names.Provider, zips map[names.Platform]ocispec.Descriptor) map[names.Platform]ocispec.Descriptor {
	pol := h.opts.Policy.Current()
	if pol == nil {
		return zips
	}
	out := make(map[names.Platform]ocispec.Descriptor, len(zips))
	for pl, z := range zips {
		if platformDecision(pol, p, pl).Allow {
			out[pl] = z
		}
	}
	return out
}

// platformDecision is pol's word on platform pl of provider p.
func platformDecision(pol *policy.Policy, p names.Provider, pl names.Platform) policy.Decision {
	return pol.Platform(policy.KindProvider, p.String(), pl.String())
}
