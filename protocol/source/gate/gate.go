// Package gate is the policy file and the attestation rule as a source
// wrapping another: versions the policy denies are left out of listings
// and not found when asked for, before anything is read of them; a stored
// release is served only when the facts the deciding rule reads (min_age,
// signers) and the attestation rule admit its root. Nothing beneath the
// gate knows of either.
package gate

import (
	"context"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Judge decides for the gate: the policy file on versions alone (nothing
// read), and on a stored release's root, the deciding rule's facts and the
// attestation rule. Denials are *source.Denied. Policy (policy.go) is the
// judge the proxy composes; tests judge with fakes.
type Judge interface {
	// Versions is the policy's word on the versions of vs for address
	// (of a policy kind; what names it for clients), as one policy in
	// force judges them all: those it denies, with why (*source.Denied;
	// logged), and those it deprecates, with the message.
	Versions(kind names.Kind, address, what string, vs []names.Version) Verdicts
	// Version denies version v of address (what names it for clients),
	// or is nil.
	Version(kind names.Kind, address, what string, v names.Version) error
	// ReadsRoot reports whether Release reads anything for address: a
	// rule with facts decides it, or attested is set and an attestation
	// rule is configured.
	ReadsRoot(kind names.Kind, address string, attested bool) bool
	// Facts denies the stored release of version v at root when the
	// deciding rule's facts (min_age, signers, vulnerabilities) do not
	// admit it; an admitted one may come with a warning for clients
	// (known vulnerabilities a rule warns of; "": none).
	Facts(ctx context.Context, kind names.Kind, address, what string, v names.Version, root source.Root) (warning string, err error)
	// Attested denies the stored release of version v at root when
	// attested is set and the attestation rule does not admit it.
	Attested(ctx context.Context, kind names.Kind, what string, v names.Version, root source.Root, attested bool) error
	// Platform denies platform pl of version v of provider p, or is nil.
	Platform(p names.Provider, v names.Version, pl names.Platform) error
	// PullsOnlyStored reports whether the rule deciding address reads
	// facts of stored releases, so nothing is served from an origin
	// directly.
	PullsOnlyStored(kind names.Kind, address string) bool
}

// Verdicts are the policy's word on the versions of a listing, by
// version: Denied those it leaves out, with why; Deprecated those it
// serves with a warning, with the message. Nil maps: none. (Known
// vulnerabilities, read from the registry, are the facts' word:
// Judge.Facts.)
type Verdicts struct {
	Denied     map[string]error
	Deprecated map[string]string
}

// versionsOf are the versions l lists.
func versionsOf(l source.Listing) []names.Version {
	vs := make([]names.Version, len(l.Versions))
	for i, e := range l.Versions {
		vs[i] = e.Version
	}
	return vs
}

// allowed keeps the entries of l whose versions judge allows (l itself
// when it allows them all), and says which of those it deprecates.
func allowed(judge Judge, kind names.Kind, address string, l source.Listing) (source.Listing, map[string]string) {
	verdicts := judge.Versions(kind, address, address, versionsOf(l))
	if len(verdicts.Denied) == 0 {
		return l, verdicts.Deprecated
	}
	out := source.Listing{At: l.At, Versions: make([]source.Listed, 0, len(l.Versions))}
	for _, e := range l.Versions {
		if verdicts.Denied[e.Version.String()] == nil {
			out.Versions = append(out.Versions, e)
		}
	}
	return out, verdicts.Deprecated
}

// Open is the judge of a server with nothing to judge: no policy file
// and no attestation rule. It allows every version and platform and
// reads nothing; as pull-through's rules (source.Rules) it leaves every
// version to the origin.
type Open struct{}

var (
	_ Judge        = Open{}
	_ source.Rules = Open{}
)

func (Open) Versions(names.Kind, string, string, []names.Version) Verdicts { return Verdicts{} }
func (Open) Version(names.Kind, string, string, names.Version) error       { return nil }
func (Open) ReadsRoot(names.Kind, string, bool) bool                       { return false }
func (Open) Facts(context.Context, names.Kind, string, string, names.Version, source.Root) (string, error) {
	return "", nil
}
func (Open) Attested(context.Context, names.Kind, string, names.Version, source.Root, bool) error {
	return nil
}
func (Open) Platform(names.Provider, names.Version, names.Platform) error       { return nil }
func (Open) PullsOnlyStored(names.Kind, string) bool                            { return false }
func (Open) Allowed(_ names.Kind, _ string, vs []names.Version) []names.Version { return vs }
func (Open) FactsRule(names.Kind, string) (string, bool)                        { return "", false }
