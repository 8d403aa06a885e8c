package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// PolicyVerdict is the policy's decision on one version of an address,
// as the server makes it when a client asks (`oci-tofu policy test`
// against the registry).
type PolicyVerdict struct {
	Version string `json:"version"`
	// Held is false when the registry holds no such version: the
	// decision is then the policy's on the version alone, or, when its
	// rule needs what the registry holds, a denial saying so.
	Held bool `json:"held"`
	policy.Decision
}

// ExplainPolicy decides on version of address (of a policy kind:
// provider, module "host/namespace/name/system", tofu) — or, when version
// is "", on every version its repository holds — with the policy in
// force and, where the deciding rule has min_age or signers, the facts
// the server reads for that rule (policy_facts.go: the same reads and
// caches, by the server's clock). The provider mappings, module template
// and OpenTofu repository are the server's. The attestation rule
// (Options.RequireAttestation, RequireTrust) is not asked: this is the
// policy's word. err is a registry failure or an address the server does
// not map.
func (s *Server) ExplainPolicy(ctx context.Context, kind, address, version string) ([]PolicyVerdict, error) {
	pol := s.opts.Policy.Current()
	if pol == nil {
		return nil, errors.New("the server has no policy")
	}
	repo, err := s.policyRepo(kind, address)
	if err != nil {
		return nil, err
	}
	versions, err := s.explainedVersions(ctx, repo, version)
	if err != nil {
		return nil, err
	}
	out := make([]PolicyVerdict, 0, len(versions))
	for _, v := range versions {
		pv, err := s.explainVersion(ctx, pol, kind, address, repo, v)
		if err != nil {
			return nil, err
		}
		out = append(out, pv)
	}
	return out, nil
}

// policyRepo is the repository an address of a kind maps to.
func (s *Server) policyRepo(kind, address string) (*store.Repo, error) {
	switch kind {
	case policy.KindProvider:
		p, err := names.ParseProvider(address)
		if err != nil {
			return nil, err
		}
		if s.held == nil {
			return nil, errors.New("the server maps no providers (no --provider-template or --config)")
		}
		return s.held.providerRepo(p)
	case policy.KindModule:
		parts := strings.Split(address, "/")
		if s.opts.ModuleTemplate == nil || len(parts) != 4 {
			return nil, fmt.Errorf("module %s: the server maps no modules, or the address is not host/namespace/name/system", address)
		}
		mod, err := names.ParseModule(parts[1], parts[2], parts[3])
		if err != nil {
			return nil, err
		}
		ref, err := s.opts.ModuleTemplate.Expand(mod.TemplateValues(parts[0]))
		if err != nil {
			return nil, fmt.Errorf("module %s has no repository here: %w", address, err)
		}
		return s.store.Repo(ref), nil
	case policy.KindTofu:
		if s.opts.TofuRepository == nil {
			return nil, errors.New("the server has no OpenTofu release repository (--tofu-repository)")
		}
		return s.store.Repo(*s.opts.TofuRepository), nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// explainedVersions are version, or every version repo holds.
func (s *Server) explainedVersions(ctx context.Context, repo *store.Repo, version string) ([]names.Version, error) {
	if version != "" {
		v, err := names.ParseVersion(version)
		return []names.Version{v}, err
	}
	l, err := repo.Versions(ctx)
	if err != nil {
		return nil, err
	}
	return l.Versions, nil
}

// explainVersion is the decision on version v of address in repo.
func (s *Server) explainVersion(ctx context.Context, pol *policy.Policy, kind, address string, repo *store.Repo, v names.Version) (PolicyVerdict, error) {
	out := PolicyVerdict{Version: v.String(), Decision: pol.Decide(kind, address, v.String())}
	n := pol.Needs(kind, address)
	root, err := explainedRoot(ctx, kind, repo, v)
	switch {
	case store.FailureOf(err) == oci.FailureNotFound:
		if out.Allow && n.Any() {
			out.Allow, out.Reason = false, fmt.Sprintf("%s %s meets the versions of the policy's rule %q, but the registry holds no such version to read its min_age and signers from", address, v, n.Rule)
		}
		return out, nil
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
	out.Decision = pol.DecideWith(kind, address, v.String(), f, s.opts.Now())
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
