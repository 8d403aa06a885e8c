package proxy

import (
	"context"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// explainVersion is the decision on version v of address: the version's
// (policy.Decide), then, when its rule has min_age or signers, the first
// repository's release that the facts allow, else the first release's
// denial (policy_explain.go).
func (s *Server) explainVersion(ctx context.Context, pol *policy.Policy, kind, address string, repos []*store.Repo, v names.Version) (PolicyVerdict, error) {
	out := PolicyVerdict{Version: v.String(), Decision: pol.Decide(kind, address, v.String())}
	n := pol.Needs(kind, address)
	var denial *policy.Decision
	for _, repo := range repos {
		root, err := explainedRoot(ctx, kind, repo, v)
		switch {
		case store.FailureOf(err) == oci.FailureNotFound:
			continue
		case err != nil:
			return out, err
		}
		out.Held = true
		if !out.Allow || !n.Any() {
			return out, nil
		}
		f, err := s.out.readFacts(ctx, pol, kind, n, root) // policy_facts.go
		if err != nil {
			return out, err
		}
		d := pol.DecideWith(kind, address, v.String(), f, s.opts.Now())
		if d.Allow {
			out.Decision = d
			return out, nil
		}
		if denial == nil {
			denial = &d
		}
	}
	switch {
	case denial != nil:
		out.Decision = *denial
	case out.Allow && n.Any():
		out.Allow, out.Reason = false, fmt.Sprintf("%s %s meets the versions of the policy's rule %q, but the registry holds no such version to read its min_age and signers from", address, v, n.Rule)
	}
	return out, nil
}

// explainedRoot is the root of version v of a kind in repo, as the held
// sources read it.
func explainedRoot(ctx context.Context, kind string, repo *store.Repo, v names.Version) (releaseRoot, error) {
	switch kind {
	case policy.KindProvider:
		pv, err := repo.ProviderVersion(ctx, v)
		if err != nil {
			return releaseRoot{}, err
		}
		return releaseRoot{repo: repo, subject: pv.Index.Digest, pv: pv}, nil
	case policy.KindModule:
		manifest, _, err := repo.Module(ctx, names.TagForVersion(v))
		return releaseRoot{repo: repo, subject: manifest.Digest}, err
	}
	rel, err := repo.TofuRelease(ctx, v)
	if err != nil {
		return releaseRoot{}, err
	}
	return releaseRoot{repo: repo, subject: rel.Digest}, nil
}
