package proxy

import (
	"context"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/source/pulled"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Module pull-through under a module rule with min_age or signers, as
// pulled_facts.go does for providers: only a stored package has what such
// a rule reads, so the versions document and downloads are the
// registry's, the rule applied (heldModules), and nothing is handed out
// from the origin. Listing the module pulls in the background the newest
// versions the origin offers that the registry does not hold and the
// rule's versions allow (the first sight, which starts their min_age
// clock when the proxy attests what it stores); a download of a version
// not held yet is 404 and starts its pull.

// factsRule reports whether the policy's rule for mod reads facts.
func (m *pulledModules) factsRule(host string, mod names.Module) bool {
	return m.s.opts.Policy.Current().Needs(policy.KindModule, moduleAddress(host, mod)).Any()
}

// versionsUnderFacts is the versions document as the registry holds it,
// the rule applied; the origin's newest versions are sighted.
func (m *pulledModules) versionsUnderFacts(ctx context.Context, repo *store.Repo, host string, mod names.Module) (any, time.Time, error) {
	m.sightOrigin(ctx, repo, host, mod)
	return m.heldModules.versionsDoc(ctx, repo, host, mod)
}

// sightOrigin starts the background pulls of the newest versions of mod
// the origin offers that the registry does not hold (a repository that
// does not exist yet holds none) and the policy's version rules allow.
func (m *pulledModules) sightOrigin(ctx context.Context, repo *store.Repo, host string, mod names.Module) {
	held, err := repo.Versions(ctx)
	if err != nil && store.FailureOf(err) != oci.FailureNotFound {
		return
	}
	offered, _, err := m.engine.ModuleOffered(ctx, m.origin, mod)
	if err != nil {
		m.engine.DegradedListing("module", m.origin+"/"+mod.String(), err)
		return
	}
	var vs []names.Version
	for canonical := range offered {
		if v, err := names.ParseVersion(canonical); err == nil {
			vs = append(vs, v)
		}
	}
	for _, v := range pulled.FirstSight(held.Versions, m.s.policyAllowed(policy.KindModule, moduleAddress(host, mod), vs)) { // pulled_facts.go, policy.go
		go m.sight(repo, mod, v)
	}
}

// sight pulls version v of mod from the origin into repo, as a first
// download would, with nobody waiting for it.
func (m *pulledModules) sight(repo *store.Repo, mod names.Module, v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), pulled.FirstSightTimeout)
	defer cancel()
	if _, err := m.engine.PullModule(ctx, m.origin, repo.Reference(), mod, v); err != nil {
		m.s.log.Debug("pull-through: the first sight of a module under a min_age or signers rule did not store it", "module", m.origin+"/"+mod.String(), "version", v.String(), "error", err)
	}
}

// notYetHeld is the 404 for version v of mod the registry does not hold
// under a facts rule; its pull is started.
func (m *pulledModules) notYetHeld(repo *store.Repo, host string, mod names.Module, v names.Version) error {
	go m.sight(repo, mod, v)
	return pulled.BeingFetched("module "+mod.String(), v, m.s.opts.Policy.Current().Needs(policy.KindModule, moduleAddress(host, mod)).Rule) // pulled_facts.go
}
