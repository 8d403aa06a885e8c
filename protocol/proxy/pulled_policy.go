package proxy

import (
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/source"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// The policy file with pull-through (docs/policy.md). The held
// sources refuse a denied version before they read anything, with a 404
// that is no versionNotHeld, so a direct request for it never reaches
// the engine; what is left is the origin's side: its listings are merged
// with the denied versions (and provider platforms) left out, and pull
// URLs are checked before a pull starts. The engine knows nothing of the
// policy: nothing denied is ever asked of it.

// allowedOrigin are the versions of vs (held, stored lately or offered by
// the origin) the policy allows for p, the others logged.
func (h *pulledProviders) allowedOrigin(p names.Provider, vs []names.Version) []names.Version {
	return h.policyAllowed(policy.KindProvider, p.String(), vs) // policy.go
}

// deniedOffer is the versions document's warning for an origin's version
// the policy denies, or "" when it allows it.
func (h *pulledProviders) deniedOffer(p names.Provider, v string) string {
	pv, err := names.ParseVersion(v)
	if err != nil {
		return ""
	}
	return h.policyWarning(p, pv) // policy.go
}

// offeredPlatforms are the origin's platforms the policy allows for p.
func (h *pulledProviders) offeredPlatforms(p names.Provider, ps []wire.RegistryPlatform) []wire.RegistryPlatform {
	pol := h.opts.Policy.Current()
	if pol == nil {
		return ps
	}
	out := make([]wire.RegistryPlatform, 0, len(ps))
	for _, pl := range ps {
		if platformDecision(pol, p, names.Platform{OS: pl.OS, Arch: pl.Arch}).Allow {
			out = append(out, pl)
		}
	}
	return out
}

// allowedArchives are the origin release's platforms the policy allows.
func (h *pulledProviders) allowedArchives(p names.Provider, ps []names.Platform) []names.Platform {
	return h.allowedPlatforms(p, ps) // policy.go
}

// pullRefusal is the 404 for a pull URL naming a version or package the
// policy denies, decided before the engine is asked anything.
func (h *pulledProviders) pullRefusal(t pullthrough.Target, req ArchiveRequest) error {
	if h.factsRule(t.Served) { // pulled_facts.go: nothing is served from the origin directly
		return source.NotFoundf("provider %s %s is served only from this proxy's registry, once the policy's min_age and signers allow it", t.Served, req.Version)
	}
	if err := h.policyDenial(policy.KindProvider, t.Served.String(), "provider "+t.Served.String(), req.Version); err != nil {
		return err
	}
	if req.File == ArchiveZip {
		return h.platformRefusal(t.Served, req.Version, req.Platform)
	}
	return nil
}

// withoutDenied is doc, or, when the policy left no version to list, the
// 404 naming why (as heldProviders answers when it lists none).
func (h *pulledProviders) withoutDenied(p names.Provider, doc wire.RegistryVersions, denied int) (wire.RegistryVersions, error) {
	if len(doc.Versions) > 0 || denied == 0 {
		return doc, nil
	}
	return doc, source.NotFoundf("provider %s has no version this proxy may serve: %s", p, strings.Join(doc.Warnings, "; "))
}

// addWarning appends w to doc's warnings unless it is there already.
func addWarning(doc *wire.RegistryVersions, w string) {
	if !slices.Contains(doc.Warnings, w) {
		doc.Warnings = append(doc.Warnings, w)
	}
}
