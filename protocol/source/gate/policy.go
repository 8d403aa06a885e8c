package gate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Policy is the gate's judge and pull-through's rules: the policy file
// (Live; the policy in force is read once per decision, so a reload
// takes effect at the next one) and the attestation rule (Admitted).
// Unlike the attestation rule, the policy needs the address and version,
// not the content, so the gate asks it before anything is read; rules
// with min_age or signers read facts of the stored release once its root
// is known (facts.go). Without a policy every question is answered
// "allowed" with nothing read. What is outside the gate's concern comes
// through its fields: the registry's reads (Admitted, Each), the clock,
// the log and who counts and records the decisions (Observe).
type Policy struct {
	// Live is the policy file in force (nil: none).
	Live *policy.Live
	// Now is the clock decisions are made by (min_age).
	Now func() time.Time
	// Admitted, when set, is the attestation rule: nil when the root of a
	// stored release of a kind may be served, a refusal (store.Refused)
	// when not, else the registry failing (store.Repo.Admitted). Nil: no
	// attestation rule is configured.
	Admitted func(ctx context.Context, kind names.Kind, root source.Root) error
	// Trusted is who, besides the policy's attestation: keys and
	// keyless: identities, is trusted to say when a release entered the
	// registry (the ingest time min_age counts from).
	Trusted attest.IngestTrust
	// Vulns is the vulnerability database a rule's vulnerabilities block
	// matches the stored SBOMs against (nil: none; a policy with such a
	// block is refused at start-up then).
	Vulns *vulns.Live
	// Each calls fn for 0 ≤ i < n, at most the store's concurrency at
	// once (store.Store.Each).
	Each func(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error
	Log  *slog.Logger
	// Observe, when set, is told each decision that shaped an answer (the
	// proxy counts them and records denials for its page).
	Observe func(Decision)
	// Vulnerable, when set, is told what the vulnerability database
	// (its fingerprint) found in each provider version whose SBOMs a
	// decision matched: whether any platform has a known vulnerability,
	// whatever the policy does about it (the proxy counts such versions).
	Vulnerable func(address string, v names.Version, fingerprint string, found bool)
}

// Decision is a decision of the policy in force on an address, as
// Policy.Observe is told it.
type Decision struct {
	policy.Decision
	Policy *policy.Policy
	// Generation is Policy's (policy.Live.CurrentWithGeneration).
	Generation uint64
	Kind       names.Kind
	Address    string
	// Version is nil for a decision on every version.
	Version *names.Version
	// FromFacts: made on facts read from the registry (min_age, signers).
	FromFacts bool
}

var (
	_ Judge        = (*Policy)(nil)
	_ source.Rules = (*Policy)(nil)
)

// Version is the denial of version v of address (of a policy kind, what
// naming it for clients) by the policy, with its reason, or nil.
func (p *Policy) Version(kind names.Kind, address, what string, v names.Version) error {
	pol, gen := p.Live.CurrentWithGeneration()
	d := p.decideWith(pol, gen, kind, address, &v) // observed
	if d.Allow {
		return nil
	}
	return denied(what, v, d)
}

// denied is the denial of version v (what naming it) by d.
func denied(what string, v names.Version, d policy.Decision) error {
	return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, d.Reason), Rule: d.Rule, Reason: d.Reason, AgesIn: d.AgesIn}
}

// Allowed are the versions of address the policy allows, the others
// logged; without a policy, vs. The policy in force when it is called
// judges every version of vs.
func (p *Policy) Allowed(kind names.Kind, address string, vs []names.Version) []names.Version {
	pol, gen := p.Live.CurrentWithGeneration() // one policy for the whole list
	if pol == nil {
		return vs
	}
	out := make([]names.Version, 0, len(vs))
	for _, v := range vs {
		d := p.decideWith(pol, gen, kind, address, &v)
		if !d.Allow {
			p.Log.Info("version left out by the policy", "kind", kind, "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
			continue
		}
		out = append(out, v)
	}
	return out
}

// Versions are the versions of vs the policy denies for address, with
// why (logged), and those it deprecates, with the message, as one policy
// in force judges them all; nothing without a policy.
func (p *Policy) Versions(kind names.Kind, address, what string, vs []names.Version) Verdicts {
	pol, gen := p.Live.CurrentWithGeneration()
	if pol == nil {
		return Verdicts{}
	}
	out := Verdicts{Denied: map[string]error{}}
	for _, v := range vs {
		d := p.decideWith(pol, gen, kind, address, &v)
		switch {
		case !d.Allow:
			p.Log.Info("version left out by the policy", "kind", string(kind), "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
			out.Denied[v.String()] = denied(what, v, d)
		case d.Deprecated != "":
			if out.Deprecated == nil {
				out.Deprecated = map[string]string{}
			}
			out.Deprecated[v.String()] = d.Deprecated
		}
	}
	return out
}

// Platform is the denial of a platform the policy leaves out, or nil.
func (p *Policy) Platform(pr names.Provider, v names.Version, pl names.Platform) error {
	pol := p.Live.Current()
	if pol == nil {
		return nil
	}
	d := PlatformDecision(pol, pr, pl)
	if d.Allow {
		return nil
	}
	return &source.Denied{Msg: fmt.Sprintf("provider %s %s is not served for %s: %s", pr, v, pl, d.Reason), Rule: d.Rule, Reason: d.Reason}
}

// PlatformDecision is pol's word on platform pl of provider p.
func PlatformDecision(pol *policy.Policy, p names.Provider, pl names.Platform) policy.Decision {
	return pol.Platform(names.KindProvider, p.String(), pl.String())
}

// FactsRule names the rule deciding address when it reads facts of a
// stored release (min_age, signers).
func (p *Policy) FactsRule(kind names.Kind, address string) (string, bool) {
	n := p.Live.Current().Needs(kind, address)
	return n.Rule, n.Any()
}

// ReadsRoot reports whether a stored release of address is read to judge
// it: a rule with facts decides it, or attested is set and an attestation
// rule is configured.
func (p *Policy) ReadsRoot(kind names.Kind, address string, attested bool) bool {
	_, facts := p.FactsRule(kind, address)
	return facts || attested && p.Admitted != nil
}

// PullsOnlyStored reports whether the rule deciding address reads facts
// of stored releases, so nothing is served from an origin directly.
func (p *Policy) PullsOnlyStored(kind names.Kind, address string) bool {
	_, ok := p.FactsRule(kind, address)
	return ok
}

// decideWith is the decision of policy pol (generation gen) on version v
// of address (every version, when v is nil) by its version rules,
// observed. An allowing decision whose rule goes on to read facts
// (min_age, signers) is observed by FactsDecision instead, once. Without
// a policy it allows and observes nothing. One policy judges the
// versions of a listing, whatever a reload does meanwhile.
func (p *Policy) decideWith(pol *policy.Policy, gen uint64, kind names.Kind, address string, v *names.Version) policy.Decision {
	if pol == nil {
		return policy.Decision{Allow: true, Rule: policy.DefaultRule, Reason: "no policy"}
	}
	var d policy.Decision
	if v != nil {
		d = pol.DecideVersion(kind, address, *v)
	} else {
		d = pol.Decide(kind, address, "")
	}
	if d.Allow && pol.HasFacts() && pol.Needs(kind, address).Any() {
		return d
	}
	p.observe(Decision{Decision: d, Policy: pol, Generation: gen, Kind: kind, Address: address, Version: v})
	return d
}

func (p *Policy) observe(d Decision) {
	if p.Observe != nil {
		p.Observe(d)
	}
}
