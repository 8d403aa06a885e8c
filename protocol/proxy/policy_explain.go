package proxy

import (
	"cmp"
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
	// Held is false when no mapping's registry holds the version: the
	// decision is then the policy's on the version alone, or, when its
	// rule needs what the registry holds, a denial saying so.
	Held bool `json:"held"`
	policy.Decision
	// Admission is what serve's admission rule (--require-attestation,
	// --require-notation: Options.RequireAttestation, RequireTrust,
	// RequireKeyless) says of the release, when the server has one and
	// the policy's version check allows a version it holds; nil otherwise.
	Admission *AdmissionVerdict `json:"admission,omitempty"`
}

// AdmissionVerdict is the admission rule's word on a release: admitted,
// or the refusal's reason (what serve logs and tells clients).
type AdmissionVerdict struct {
	Admitted bool   `json:"admitted"`
	Reason   string `json:"reason,omitempty"`
}

// Served reports whether serve lists and serves the version: the policy
// allows it and, with an admission rule, admits it.
func (v PolicyVerdict) Served() bool {
	return v.Allow && (v.Admission == nil || v.Admission.Admitted)
}

// ExplainPolicy decides on version of address (of a policy kind:
// provider, module "host/namespace/name/system", tofu) — or, when version
// is "", on every version the repositories it maps to hold — with the
// policy in force and, where the deciding rule has min_age or signers,
// the facts the server reads for that rule (the gate's, protocol/source/gate/facts.go: the same
// reads and caches, by the server's clock). The repositories are the
// server's mappings that admit the address, in order; as in the merged
// views (merged.go, protocol/source/merged) a version is allowed when one of
// them holds a release of it that the policy allows, else the first
// denial decides. A version the policy allows is also put to the
// server's admission rule (Options.RequireAttestation, RequireTrust,
// RequireKeyless), as the listings put it, and served only when one
// repository holds a release both admit (PolicyVerdict.Served). err is a
// registry failure or an address the server does not map.
func (s *Server) ExplainPolicy(ctx context.Context, kind names.Kind, address, version string) ([]PolicyVerdict, error) {
	pol := s.opts.Policy.Current()
	if pol == nil {
		return nil, errors.New("the server has no policy")
	}
	repos, err := s.policyRepos(kind, address)
	if err != nil {
		return nil, err
	}
	versions, err := explainedVersions(ctx, repos, version)
	if err != nil {
		return nil, err
	}
	out := make([]PolicyVerdict, 0, len(versions))
	for _, v := range versions {
		pv, err := s.explainVersion(ctx, pol, kind, address, repos, v)
		if err != nil {
			return nil, err
		}
		out = append(out, pv)
	}
	return out, nil
}

// policyRepos are the repositories an address of a kind maps to, in the
// order the server tries them.
func (s *Server) policyRepos(kind names.Kind, address string) ([]*store.Repo, error) {
	switch kind {
	case policy.KindProvider:
		p, err := names.ParseProvider(address)
		if err != nil {
			return nil, err
		}
		return s.providerRepos(p)
	case policy.KindModule:
		return s.moduleRepos(address)
	case policy.KindTofu:
		if s.opts.TofuRepository == nil {
			return nil, errors.New("the server has no OpenTofu release repository (--tofu-repository)")
		}
		return []*store.Repo{s.store.Repo(*s.opts.TofuRepository)}, nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// providerRepos are p's repositories: in every mapping admitting it
// (merged), or only the first with pull-through, as mountProviders
// serves them.
func (s *Server) providerRepos(p names.Provider) ([]*store.Repo, error) {
	if s.providerRepo == nil {
		return nil, errors.New("the server maps no providers (no --provider-template or --config)")
	}
	var out []*store.Repo
	for _, mp := range s.providerMappings {
		if ref, err := (store.ProviderMappings{mp}).Map(p); err == nil && (len(out) == 0 || !s.pull.Providers()) {
			out = append(out, s.store.Repo(ref))
		}
	}
	if len(out) == 0 {
		_, err := s.providerRepo(p) // its error says why
		return nil, err
	}
	return out, nil
}

// moduleRepos are a module's repositories in the module templates, as
// the held module sources map it (protocol/source/held).
func (s *Server) moduleRepos(address string) ([]*store.Repo, error) {
	parts := strings.Split(address, "/")
	if len(s.opts.ModuleMappings) == 0 || len(parts) != 4 {
		return nil, fmt.Errorf("module %s: the server maps no modules, or the address is not host/namespace/name/system", address)
	}
	mod, err := names.ParseModule(parts[1], parts[2], parts[3])
	if err != nil {
		return nil, err
	}
	var out []*store.Repo
	for _, tpl := range s.opts.ModuleMappings {
		if ref, err := tpl.Expand(mod.TemplateValues(parts[0])); err == nil {
			out = append(out, s.store.Repo(ref))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("module %s has no repository here", address)
	}
	return out, nil
}

// explainedVersions are version, or every version one of repos holds,
// oldest first (a repository that does not exist is passed over).
func explainedVersions(ctx context.Context, repos []*store.Repo, version string) ([]names.Version, error) {
	if version != "" {
		v, err := names.ParseVersion(version)
		return []names.Version{v}, err
	}
	seen := map[string]bool{}
	var out names.VersionList
	var absent error
	for _, repo := range repos {
		l, err := repo.Versions(ctx)
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
