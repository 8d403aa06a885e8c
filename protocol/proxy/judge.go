package proxy

import (
	"context"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// policyJudge decides for the gate and pull-through with the policy file
// (policy.go, policy_facts.go) and the attestation rule (admission.go).
type policyJudge struct{ s *responder }

func (s *responder) judge() policyJudge { return policyJudge{s} }

func (j policyJudge) Denials(kind names.Kind, address, what string, vs []names.Version) map[string]error {
	return j.s.policyDenials(kind, address, what, vs)
}

func (j policyJudge) Allowed(kind names.Kind, address string, vs []names.Version) []names.Version {
	return j.s.policyAllowed(kind, address, vs)
}

func (j policyJudge) Version(kind names.Kind, address, what string, v names.Version) error {
	return j.s.policyDenial(kind, address, what, v)
}

func (j policyJudge) FactsRule(kind names.Kind, address string) (string, bool) {
	n := j.s.opts.Policy.Current().Needs(kind, address)
	return n.Rule, n.Any()
}

func (j policyJudge) ReadsRoot(kind names.Kind, address string, attested bool) bool {
	_, facts := j.FactsRule(kind, address)
	return facts || attested && j.s.opts.admitting()
}

func (j policyJudge) Facts(ctx context.Context, kind names.Kind, address, what string, v names.Version, root source.Root) error {
	return j.s.factsDenial(ctx, kind, address, what, v, releaseRoot{repo: root.Repo, subject: root.Digest, pv: root.Index})
}

func (j policyJudge) Attested(ctx context.Context, kind names.Kind, what string, v names.Version, root source.Root, attested bool) error {
	if !attested || !j.s.opts.admitting() {
		return nil
	}
	return admitted(ctx, root.Repo, kind, what, v, root.Digest)
}

func (j policyJudge) Platform(p names.Provider, v names.Version, pl names.Platform) error {
	return j.s.platformRefusal(p, v, pl)
}

func (j policyJudge) PullsOnlyStored(kind names.Kind, address string) bool {
	_, ok := j.FactsRule(kind, address)
	return ok
}
