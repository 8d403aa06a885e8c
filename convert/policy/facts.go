package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Facts are what a decision under min_age or signers needs to know of a
// release, read from the registry by the caller (the proxy) when Needs
// says the deciding rule needs them.
type Facts struct {
	// Ingested is when the release entered the registry: the time its
	// oci-tofu attestation by a trusted key records (verified_at,
	// attested_at; pull-through's first sight). Zero when unknown.
	Ingested time.Time
	// Signed says, by Signer.Spec, which of the rule's signers signed the
	// release (checked by the caller); a signer missing is unsigned.
	Signed map[string]bool
	// Why says, by Signer.Spec, why a signer is not counted as signed,
	// when the caller knows (added to the denial's reason).
	Why map[string]string
	// Vulns are, for a rule with a vulnerabilities block, what the SBOM
	// of each platform of the release says, matched against the
	// vulnerability database.
	Vulns []PlatformVulns
}

// Needs says what the rule deciding an address needs to know of each
// release besides its version: nothing (the zero Needs) for a rule
// without min_age and signers, or no rule at all.
type Needs struct {
	// Rule is the deciding rule's name.
	Rule string
	// MinAge is its min_age (0: none): the release's ingest time.
	MinAge time.Duration
	// Signers are its signers: each must be checked.
	Signers []*Signer
	// Vulns is its vulnerabilities block (nil: none): the SBOM of each
	// platform must be read and matched.
	Vulns *Vulnerabilities
}

// Any reports whether the decision needs facts.
func (n Needs) Any() bool { return n.MinAge > 0 || len(n.Signers) > 0 || n.Vulns != nil }

// Needs is what deciding on a version of address needs beyond Decide.
// It is cheap: a caller asks before reading anything from the registry.
func (p *Policy) Needs(kind names.Kind, address string) Needs {
	if p == nil {
		return Needs{}
	}
	r := p.match(kind, address)
	if r == nil {
		return Needs{}
	}
	return Needs{Rule: r.name, MinAge: r.minAge, Signers: r.signers, Vulns: r.vulns}
}

// DecideWith is Decide for a version, then the deciding rule's signers
// (all of them must have signed) and min_age (the release must have
// entered the registry at least that long before now; a release whose
// ingest time is unknown is denied: the cool-down cannot be shown to be
// over). A version min_age denies has Decision.AgesIn set: when it will
// be allowed, if nothing else changes.
func (p *Policy) DecideWith(kind names.Kind, address, version string, f Facts, now time.Time) Decision {
	d := p.Decide(kind, address, version)
	if !d.Allow || version == "" || p == nil {
		return d
	}
	r := p.match(kind, address)
	if r == nil {
		return d
	}
	what := address + " " + version
	for _, s := range r.signers {
		if !f.Signed[s.Spec] {
			reason := fmt.Sprintf("%s is not signed by %s, which the policy's rule %q requires%s", what, s.Spec, r.name, signerHint(s))
			if why := f.Why[s.Spec]; why != "" {
				reason += ": " + why
			}
			return Decision{Allow: false, Rule: r.name, Reason: reason}
		}
	}
	if r.vulns != nil {
		if d = r.decideVulns(what, f.Vulns, d); !d.Allow {
			return d
		}
	}
	if r.minAge <= 0 {
		return d
	}
	if f.Ingested.IsZero() {
		return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s has no known ingest time (no oci-tofu attestation by a trusted key or keyless identity records when it entered the registry), so min_age = %q of the policy's rule %q cannot be met", what, r.minAgeText, r.name)}
	}
	agesIn := f.Ingested.Add(r.minAge)
	if now.Before(agesIn) {
		return Decision{Allow: false, Rule: r.name, AgesIn: agesIn, Reason: fmt.Sprintf("%s entered the registry at %s and is younger than min_age = %q of the policy's rule %q: it is served from %s", what, stamp(f.Ingested), r.minAgeText, r.name, stamp(agesIn))}
	}
	return d
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// signerHint says how a signer's signature comes to be.
func signerHint(s *Signer) string {
	switch s.Kind {
	case SignerPublisher:
		return " (the key IDs verified when it was pushed)"
	case SignerAttestation:
		return " (an oci-tofu attestation: push --attest-key)"
	case SignerNotation:
		return " (a Notary Project signature its trust policy accepts: notation sign)"
	case SignerKeyless:
		return " (a keyless Sigstore attestation by that identity: cosign attest)"
	}
	return " (a cosign signature: cosign sign --key)"
}

// DecideOffline is Decide for `policy test` without a registry: when the
// versions allow a version but the deciding rule also has min_age or
// signers, the decision is not allowed but pending, DependsOn naming
// what it depends on.
func (p *Policy) DecideOffline(kind names.Kind, address, version string) Decision {
	d := p.Decide(kind, address, version)
	n := p.Needs(kind, address)
	if !d.Allow || version == "" || !n.Any() {
		return d
	}
	var on []string
	if n.MinAge > 0 {
		on = append(on, "min_age")
	}
	if len(n.Signers) > 0 {
		on = append(on, "signers")
	}
	if n.Vulns != nil {
		on = append(on, "vulnerabilities")
	}
	specs := make([]string, len(n.Signers))
	for i, s := range n.Signers {
		specs[i] = s.Spec
	}
	reason := fmt.Sprintf("%s %s meets the versions of the policy's rule %q, but the decision depends on what the registry holds of it: %s", address, version, n.Rule, strings.Join(on, " and "))
	if len(specs) > 0 {
		reason += " (signed by " + strings.Join(specs, " and ") + ")"
	}
	return Decision{Allow: false, Rule: n.Rule, Reason: reason, DependsOn: on}
}

// factRules sum up the rules with min_age or signers, at parse time.
type factRules struct {
	any             bool
	attestationKeys []*attest.Verifier
	// keyless are the keyless signers' checks, one per entry.
	keyless     []attest.BundleVerifier
	keylessSeen map[string]bool
}

func (f *factRules) add(r *rule) {
	f.any = f.any || r.minAge > 0 || len(r.signers) > 0 || r.vulns != nil
	for _, s := range r.signers {
		switch {
		case s.Kind == SignerAttestation && !slices.ContainsFunc(f.attestationKeys, s.Key.Equal):
			f.attestationKeys = append(f.attestationKeys, s.Key)
		case s.Kind == SignerKeyless && !f.keylessSeen[s.Spec]:
			if b, ok := s.Check.(attest.BundleVerifier); ok { // a keyless signer (verified.go: KeylessLoader)
				if f.keylessSeen == nil {
					f.keylessSeen = map[string]bool{}
				}
				f.keylessSeen[s.Spec] = true
				f.keyless = append(f.keyless, b)
			}
		}
	}
}

// HasFacts reports whether some rule has min_age or signers: without one,
// Needs is always empty and callers can skip asking.
func (p *Policy) HasFacts() bool { return p != nil && p.facts.any }

// IngestTrust is who the file trusts to say when a release entered the
// registry (the ingest time min_age counts from): the keys of its
// attestation: signers and the identities of its keyless: signers, each
// once. Callers add the keys and identities they trust besides.
func (p *Policy) IngestTrust() attest.IngestTrust {
	if p == nil {
		return attest.IngestTrust{}
	}
	return attest.IngestTrust{Keys: p.facts.attestationKeys, Bundles: p.facts.keyless}
}

// Serial is unique to this policy among those the process loaded: a key
// for what callers cache of decisions under its signers.
func (p *Policy) Serial() uint64 {
	if p == nil {
		return 0
	}
	return p.serial
}

// AttestationKeys are the keys of every attestation: signer of the file,
// each once: an attestation by one of them is trusted for the ingest time
// min_age counts from.
func (p *Policy) AttestationKeys() []*attest.Verifier {
	if p == nil {
		return nil
	}
	return p.facts.attestationKeys
}
