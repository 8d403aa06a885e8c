package proxy

import (
	"context"
	"errors"

	"github.com/oci-tofu/oci-tofu/protocol/source/pulled"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// Pull-through under a policy rule with min_age or signers
// (docs/policy.md): only a stored release has the facts such a rule reads
// (its signatures, and its ingest time, which for pull-through is when it
// stored and attested the release: its first sight). For an address such
// a rule decides, the pulled source therefore answers as the held source
// does, facts applied, and pulls in the background what the origin offers
// that the registry does not hold and the rule's versions allow: stored,
// its clock starts, and it is served once it passes. Nothing is handed
// out from the origin directly.

// factsRule reports whether the policy rule deciding p reads facts.
func (h *pulledProviders) factsRule(p names.Provider) bool {
	return h.opts.Policy.Current().Needs(policy.KindProvider, p.String()).Any()
}

// sightOrigin starts the background pulls of the newest versions t's
// origin offers that the registry does not hold and the policy's version
// rules allow.
func (h *pulledProviders) sightOrigin(ctx context.Context, p names.Provider, t pullthrough.Target) {
	held, _, err := h.heldVersions(ctx, p)
	if err != nil {
		return
	}
	l, _, err := h.engine.Offered(ctx, t)
	if err != nil {
		h.engine.DegradedListing("provider", t.Origin.String(), err)
		return
	}
	for _, v := range pulled.FirstSight(held, h.allowedOrigin(p, l.Versions)) { // pulled_policy.go
		go h.sight(t, v)
	}
}

// sight pulls version v of t's origin into the registry, as a first
// request would, with nobody waiting for it.
func (h *pulledProviders) sight(t pullthrough.Target, v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), pulled.FirstSightTimeout)
	defer cancel()
	rel, err := h.engine.ProviderRelease(ctx, t, v)
	if err == nil {
		_, _, err = h.engine.StartProvider(ctx, t, v, rel, "", false)
	}
	if err != nil && !errors.Is(err, pullthrough.ErrFinished) {
		h.log.Debug("pull-through: the first sight of a release under a min_age or signers rule did not start its pull", "release", t.Origin.String()+" "+v.String(), "error", err)
	}
}

// notYetHeld is the 404 for version v of p the registry does not hold
// under a facts rule; its pull is started.
func (h *pulledProviders) notYetHeld(p names.Provider, t pullthrough.Target, v names.Version) error {
	go h.sight(t, v)
	return pulled.BeingFetched("provider "+p.String(), v, h.opts.Policy.Current().Needs(policy.KindProvider, p.String()).Rule)
}
