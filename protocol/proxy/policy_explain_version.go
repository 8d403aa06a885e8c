package proxy

import (
	"context"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// explainVersion is the decision on version v of address: the version's
// (policy.Decide); then, for each repository holding it, in order, what
// serve's listings ask of that release after the version check: the
// admission rule and the facts of a rule with min_age or signers (as
// the gate reads them: sources.go, readFacts), each reported on its own. The first release
// that passes both decides; else the first release held
// (policy_explain.go).
func (s *Server) explainVersion(ctx context.Context, pol *policy.Policy, kind names.Kind, address string, repos []*store.Repo, v names.Version) (PolicyVerdict, error) {
	out := PolicyVerdict{Version: v.String(), Decision: pol.Decide(kind, address, v.String())}
	var first *PolicyVerdict
	for _, repo := range repos {
		root, err := explainedRoot(ctx, kind, repo, v)
		switch {
		case store.FailureOf(err) == oci.FailureNotFound:
			continue
		case err != nil:
			return out, err
		}
		out.Held = true
		if !out.Allow {
			return out, nil
		}
		pv, err := s.explainRelease(ctx, pol, kind, address, root, out)
		if err != nil || pv.Served() {
			return pv, err
		}
		if first == nil {
			first = &pv
		}
	}
	if first != nil {
		return *first, nil
	}
	if n := pol.Needs(kind, address); out.Allow && n.Any() {
		out.Allow, out.Reason = false, fmt.Sprintf("%s %s meets the versions of the policy's rule %q, but the registry holds no such version to read its min_age and signers from", address, v, n.Rule)
	}
	return out, nil
}

// explainRelease is the verdict on one held release (root) of a version
// the policy's version check allows (out): the admission rule's, when the
// server has one for the kind, and the policy's with the facts its rule
// needs — both asked, so that each says its word.
func (s *Server) explainRelease(ctx context.Context, pol *policy.Policy, kind names.Kind, address string, root source.Root, out PolicyVerdict) (PolicyVerdict, error) {
	if s.admitsKind(kind) {
		err := root.Repo.Admitted(ctx, kind, root.Digest) // the store's admission, as the listings ask it
		r, refused := store.Refused(err)
		switch {
		case refused:
			out.Admission = &AdmissionVerdict{Reason: r.Reason}
		case err != nil:
			return out, err
		default:
			out.Admission = &AdmissionVerdict{Admitted: true}
		}
	}
	n := pol.Needs(kind, address)
	if !n.Any() {
		return out, nil
	}
	f, err := s.readFacts(ctx, pol, kind, n, root) // the gate's reads (sources.go)
	if err != nil {
		return out, err
	}
	out.Decision = pol.DecideWith(kind, address, out.Version, f, s.opts.Now())
	return out, nil
}

// admitsKind reports whether serve asks its admission rule of the
// releases of a policy kind: with a rule, except OpenTofu releases under
// pull-through (gate.Tofu.Attested is off: sources.go).
func (s *Server) admitsKind(kind names.Kind) bool {
	return s.opts.admitting() && !(kind == policy.KindTofu && s.pull.Tofu())
}

// explainedRoot is the root of version v of a kind in repo, as the held
// sources read it.
func explainedRoot(ctx context.Context, kind names.Kind, repo *store.Repo, v names.Version) (source.Root, error) {
	switch kind {
	case policy.KindProvider:
		pv, err := repo.ProviderVersion(ctx, v)
		if err != nil {
			return source.Root{}, err
		}
		return source.Root{Repo: repo, Digest: pv.Index.Digest, Index: pv}, nil
	case policy.KindModule:
		manifest, _, err := repo.Module(ctx, names.TagForVersion(v))
		return source.Root{Repo: repo, Digest: manifest.Digest}, err
	}
	rel, err := repo.StoredTofu(ctx, v)
	if err != nil {
		return source.Root{}, err
	}
	return source.Root{Repo: repo, Digest: rel.Digest}, nil
}
