package gate

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The gate's decisions, recorded: what the gate decides of an address's
// versions when it serves them, each question it asks answered in the
// open (`oci-tofu policy test` against the registry). The policy decides
// on the version alone (nothing read); for a version it allows, each
// mapping holding a release of it is asked, in order, what the gate asks
// of a stored release: the attestation rule (Policy.Admitted) and the
// facts the deciding rule reads (Policy.ReadFacts), with the same reads,
// caches and clock. As in the merged views (protocol/source/merged), the
// first release both admit is served; else the first release held says
// why not. Nothing is observed: an explanation is not a decision that
// shaped an answer.

// Verdict is the policy's decision on one version of an address, as the
// gate makes it when a client asks.
type Verdict struct {
	Version string `json:"version"`
	// Held is false when no mapping's registry holds the version: the
	// decision is then the policy's on the version alone, or, when its
	// rule needs what the registry holds, a denial saying so.
	Held bool `json:"held"`
	policy.Decision
	// Admission is what the attestation rule (Policy.Admitted: the
	// proxy's --require-attestation, --require-notation,
	// --require-keyless) says of the release, when the gate asks it of
	// the kind and the policy's version check allows a version held; nil
	// otherwise.
	Admission *AdmissionVerdict `json:"admission,omitempty"`
}

// AdmissionVerdict is the attestation rule's word on a release:
// admitted, or the refusal's reason (what the gate logs and tells
// clients).
type AdmissionVerdict struct {
	Admitted bool   `json:"admitted"`
	Reason   string `json:"reason,omitempty"`
}

// Served reports whether the gate lists and serves the version: the
// policy allows it and, with an attestation rule, admits it.
func (v Verdict) Served() bool {
	return v.Allow && (v.Admission == nil || v.Admission.Admitted)
}

// Held is what one mapping's registry holds of the address explained:
// the repository it maps the address to, whose version tags are the
// versions explained when none is named, and the root of the stored
// release of a version, as the mapping's held source reads it
// (source.ErrNotHeld when it holds none).
type Held struct {
	Repo *store.Repo
	Root func(ctx context.Context, v names.Version) (*source.Root, error)
}

// HeldProvider is provider p in repo, its roots resolved by src, the
// mapping's held source.
func HeldProvider(repo *store.Repo, src source.Providers, p names.Provider) Held {
	return Held{Repo: repo, Root: func(ctx context.Context, v names.Version) (*source.Root, error) {
		r, err := src.ResolveProvider(ctx, p, v, names.ViaMirror)
		if err != nil {
			return nil, err
		}
		return r.Root, nil
	}}
}

// HeldModule is module a in repo, its roots read by src, the mapping's
// held source.
func HeldModule(repo *store.Repo, src source.Modules, a source.ModuleAddress) Held {
	return Held{Repo: repo, Root: func(ctx context.Context, v names.Version) (*source.Root, error) {
		rel, err := src.ModuleRelease(ctx, a, v)
		if err != nil {
			return nil, err
		}
		return rel.Root, nil
	}}
}

// HeldTofu is the OpenTofu releases in repo, their roots read by src,
// its held source.
func HeldTofu(repo *store.Repo, src source.Tofu) Held {
	return Held{Repo: repo, Root: func(ctx context.Context, v names.Version) (*source.Root, error) {
		rel, err := src.TofuRelease(ctx, v)
		if err != nil {
			return nil, err
		}
		return rel.Root, nil
	}}
}

// Explain is the gate's decision on version of address (of a policy
// kind) — or, when version is "", on every version the mappings hold,
// oldest first — by the policy in force when it is called and, where the
// deciding rule has min_age or signers, the facts the gate reads for that
// rule. mappings are the held sources of the mappings serving the
// address, in the order the gate tries them; they are asked for only once
// a policy is known to be in force. attested says whether the gate asks
// the attestation rule of the kind's releases (as Tofu.Attested does). A
// version is allowed when one mapping holds a release of it the policy
// allows, else the first denial decides, and served only when one
// mapping holds a release both the policy and the attestation rule admit
// (Verdict.Served). err is a registry failure, no policy, or the
// mappings' error.
func (p *Policy) Explain(ctx context.Context, kind names.Kind, address, version string, attested bool, mappings func() ([]Held, error)) ([]Verdict, error) {
	pol := p.Live.Current()
	if pol == nil {
		return nil, errors.New("the server has no policy")
	}
	held, err := mappings()
	if err != nil {
		return nil, err
	}
	versions, err := heldVersions(ctx, held, version)
	if err != nil {
		return nil, err
	}
	out := make([]Verdict, 0, len(versions))
	for _, v := range versions {
		pv, err := p.explainVersion(ctx, pol, kind, address, held, v, attested)
		if err != nil {
			return nil, err
		}
		out = append(out, pv)
	}
	return out, nil
}

// HeldVersions are the versions one of held holds, oldest first (a
// repository that does not exist is passed over; none existing is its
// error): what serve's reload events judge.
func HeldVersions(ctx context.Context, held []Held) ([]names.Version, error) {
	return heldVersions(ctx, held, "")
}

// heldVersions are version, or every version one of held holds, oldest
// first (a repository that does not exist is passed over).
func heldVersions(ctx context.Context, held []Held, version string) ([]names.Version, error) {
	if version != "" {
		v, err := names.ParseVersion(version)
		return []names.Version{v}, err
	}
	seen := map[string]bool{}
	var out names.VersionList
	var absent error
	for _, h := range held {
		l, err := h.Repo.Versions(ctx)
		if store.FailureOf(err) == oci.FailureNotFound {
			absent = cmp.Or(absent, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range l.Versions {
			if !seen[v.String()] {
				seen[v.String()] = true
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 && absent != nil {
		return nil, absent
	}
	out.Sort()
	return out, nil
}

// explainVersion is the decision on version v of address: the version's
// (policy.Decide); then, for each mapping holding it, in order, what the
// gate asks of that release after the version check: the attestation
// rule and the facts of a rule with min_age or signers, each reported on
// its own. The first release that passes both decides; else the first
// release held.
func (p *Policy) explainVersion(ctx context.Context, pol *policy.Policy, kind names.Kind, address string, held []Held, v names.Version, attested bool) (Verdict, error) {
	out := Verdict{Version: v.String(), Decision: pol.Decide(kind, address, v.String())}
	var first *Verdict
	for _, h := range held {
		root, err := h.Root(ctx, v)
		switch {
		case source.IsNotHeld(err), err == nil && root == nil:
			continue
		case err != nil:
			return out, err
		}
		out.Held = true
		if !out.Allow {
			return out, nil
		}
		pv, err := p.explainRelease(ctx, pol, kind, address, *root, out, attested)
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
// the policy's version check allows (out): the attestation rule's, when
// attested is set and one is configured (as Policy.Attested asks it),
// and the policy's with the facts its rule needs (Policy.ReadFacts) —
// both asked, so that each says its word.
func (p *Policy) explainRelease(ctx context.Context, pol *policy.Policy, kind names.Kind, address string, root source.Root, out Verdict, attested bool) (Verdict, error) {
	if attested && p.Admitted != nil {
		err := p.Admitted(ctx, kind, root)
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
	f, err := p.ReadFacts(ctx, pol, kind, n, root)
	if err != nil {
		return out, err
	}
	out.Decision = pol.DecideWith(kind, address, out.Version, f, p.Now())
	return out, nil
}
