package policy

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Decision is the policy's word on a release: whether it is allowed, the
// name of the rule that decided ("default" when none matched), and why,
// in a sentence fit for a client.
type Decision struct {
	Allow  bool   `json:"allow"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// AgesIn, for a version min_age denies, is when it will be old
	// enough (DecideWith).
	AgesIn time.Time `json:"ages_in,omitzero"`
	// DependsOn, for a decision made without the registry
	// (DecideOffline), names what it depends on: "min_age", "signers".
	DependsOn []string `json:"depends_on,omitempty"`
	// Deprecated, for a version allowed but deprecated by the deciding
	// rule, is the message of its deprecated block: clients are warned
	// with it.
	Deprecated string `json:"deprecated,omitempty"`
	// Vulnerable are the IDs of the known vulnerabilities the deciding
	// rule's vulnerabilities block acts on (DecideWith): a denial names
	// them in Reason, an allowed version is warned of them with
	// VulnWarning.
	Vulnerable  []string `json:"vulnerable,omitempty"`
	VulnWarning string   `json:"vulnerability_warning,omitempty"`
}

// DefaultRule is the Decision.Rule of a decision no block made.
const DefaultRule = "default"

// match is the first rule of kind matching address, in the order of the
// file: a narrow rule must come before a broad one to take effect.
// Addresses are "hostname/namespace/type" for providers,
// "hostname/namespace/name/system" for modules, anything for tofu. The
// index (at the end of this file) finds it without trying every rule.
func (p *Policy) match(kind names.Kind, address string) *rule {
	address = strings.ToLower(address)
	i := -1
	if p.index != nil {
		i = p.index.first(p.rules, kind, address)
	} else {
		i = scan(p.rules, kind, address)
	}
	if i >= 0 {
		return p.rules[i]
	}
	return nil
}

func (p *Policy) defaultDecision(kind names.Kind, address string) Decision {
	if p.denyByDefault {
		return Decision{Allow: false, Rule: DefaultRule, Reason: fmt.Sprintf("no %s rule of the policy matches %s, and the policy's default is deny", kind, address)}
	}
	return Decision{Allow: true, Rule: DefaultRule, Reason: fmt.Sprintf("no %s rule of the policy matches %s, and the policy's default is allow", kind, address)}
}

// Decide says whether the version of address (of kind names.KindProvider,
// names.KindModule or names.KindTofu) may be served: the first matching rule decides
// (a version it denies outright, or that does not meet its versions, is
// denied; any other allowed), and without one the default. A nil Policy
// allows everything. An empty version asks about the address alone: it
// is allowed when some version may be.
func (p *Policy) Decide(kind names.Kind, address, version string) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule, Reason: "no policy"}
	}
	r := p.match(kind, address)
	if r == nil {
		return p.defaultDecision(kind, address)
	}
	if version == "" {
		reason := fmt.Sprintf("allowed by rule %q", r.name)
		if r.versions != "" || len(r.deny) > 0 || len(r.revoked) > 0 {
			reason += " for the versions it allows" + r.describeVersions()
		}
		return Decision{Allow: true, Rule: r.name, Reason: reason}
	}
	v, err := names.ParseVersion(version)
	if err != nil {
		return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%q is not a version", version)}
	}
	return r.decideVersion(address, v)
}

// DecideVersion is Decide for a version already parsed: what the proxy
// asks once per version it lists.
func (p *Policy) DecideVersion(kind names.Kind, address string, v names.Version) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule, Reason: "no policy"}
	}
	r := p.match(kind, address)
	if r == nil {
		return p.defaultDecision(kind, address)
	}
	return r.decideVersion(address, v)
}

// decideVersion is rule r's word on version v of address.
// A revoked version is denied first: its message says more than a deny
// or versions would.
func (r *rule) decideVersion(address string, v names.Version) Decision {
	if d, revoked := r.revocation(address, v); revoked {
		return d
	}
	for _, d := range r.deny {
		if d.Same(v) {
			return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s %s is denied by the policy's rule %q", address, v, r.name)}
		}
	}
	if r.admits != nil && !r.admits.Has(v) {
		return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s %s does not meet versions = %q of the policy's rule %q", address, v, r.versions, r.name)}
	}
	return Decision{Allow: true, Rule: r.name, Reason: address + " " + v.String() + " is allowed by the policy's rule " + strconv.Quote(r.name), Deprecated: r.deprecation(v)}
}

func (r *rule) describeVersions() string {
	var parts []string
	if r.versions != "" {
		parts = append(parts, fmt.Sprintf("versions = %q", r.versions))
	}
	if len(r.deny) > 0 {
		ds := make([]string, len(r.deny))
		for i, d := range r.deny {
			ds[i] = d.String()
		}
		parts = append(parts, "deny = ["+strings.Join(ds, ", ")+"]")
	}
	for _, b := range r.revoked {
		parts = append(parts, fmt.Sprintf("revoked %s", b.describe()))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Platform says whether a platform ("linux_amd64") of address may be
// served: the first matching rule's platforms, when it lists them; every
// platform otherwise. It does not repeat Decide's version check.
func (p *Policy) Platform(kind names.Kind, address, platform string) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule, Reason: "no policy"}
	}
	r := p.match(kind, address)
	if r == nil || r.platforms == nil {
		name := DefaultRule
		if r != nil {
			name = r.name
		}
		return Decision{Allow: true, Rule: name, Reason: "every platform is allowed"}
	}
	if r.platforms[strings.ToLower(platform)] {
		return Decision{Allow: true, Rule: r.name, Reason: fmt.Sprintf("%s is among the platforms of the policy's rule %q", platform, r.name)}
	}
	return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s is not among the platforms of the policy's rule %q", platform, r.name)}
}

// Rules is the number of rules, for logs.
func (p *Policy) Rules() int {
	if p == nil {
		return 0
	}
	return len(p.rules)
}

// What a rule's revoked and deprecated blocks (lifecycle.go parses
// them) say of a version.

// revocation is the denial of version v of address by a revoked block
// of r, or false.
func (r *rule) revocation(address string, v names.Version) (Decision, bool) {
	b := firstMatching(r.revoked, v)
	if b == nil {
		return Decision{}, false
	}
	return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s %s is revoked by the policy's rule %q: %s", address, v, r.name, b.message)}, true
}

// deprecation is the message of r's first deprecated block about v ("":
// none).
func (r *rule) deprecation(v names.Version) string {
	if b := firstMatching(r.deprecated, v); b != nil {
		return b.message
	}
	return ""
}

// Deprecation is the message of the first deprecated block of the rule
// deciding address that is about version v, and whether there is one.
// It does not say whether v is allowed (Decision.Deprecated does, for a
// version that is).
func (p *Policy) Deprecation(kind names.Kind, address string, v names.Version) (string, bool) {
	return p.lifecycleMessage(kind, address, v, func(r *rule) []*lifecycleBlock { return r.deprecated })
}

// Revocation is the message of the first revoked block of the rule
// deciding address that is about version v, and whether there is one:
// what tells a revoked version from one denied otherwise (Decide denies
// it, its reason ending with the message).
func (p *Policy) Revocation(kind names.Kind, address string, v names.Version) (string, bool) {
	return p.lifecycleMessage(kind, address, v, func(r *rule) []*lifecycleBlock { return r.revoked })
}

// lifecycleMessage is the message of the first of the deciding rule's
// blocks (as blocks picks them) that is about version v, and whether
// there is one.
func (p *Policy) lifecycleMessage(kind names.Kind, address string, v names.Version, blocks func(*rule) []*lifecycleBlock) (string, bool) {
	if p == nil {
		return "", false
	}
	r := p.match(kind, address)
	if r == nil {
		return "", false
	}
	if b := firstMatching(blocks(r), v); b != nil {
		return b.message, true
	}
	return "", false
}

// firstMatching is the first of bs about version v, or nil.
func firstMatching(bs []*lifecycleBlock, v names.Version) *lifecycleBlock {
	for _, b := range bs {
		if b.matches(v) {
			return b
		}
	}
	return nil
}

// matches reports whether b is about version v.
func (b *lifecycleBlock) matches(v names.Version) bool {
	if b.sets == nil {
		return true
	}
	for _, s := range b.sets {
		if s.Has(v) {
			return true
		}
	}
	return false
}

// Decisions under min_age, signers and vulnerabilities: what they need
// to know of a release besides its version.

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

// HasFacts reports whether some rule has min_age or signers: without one,
// Needs is always empty and callers can skip asking.
func (p *Policy) HasFacts() bool { return p != nil && p.facts.any }

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

// The index behind match.

// index finds the first rule of a kind matching an address without
// trying every rule: a decision is made per version listed, and a policy
// may have MaxRules rules (docs/benchmarks.md). Rules whose pattern has no
// wildcard are found in a map. Those with one are kept by kind and the
// segments before their first wildcard ("registry.opentofu.org/hashicorp"
// for registry.opentofu.org/hashicorp/*): an address can only match those
// filed under one of its own leading segments, and these few lists are
// tried together in the order of the file, only as far as the first
// exact match. So the first rule in the file that matches still decides
// (scan is the plain reading of that rule, and the tests hold the two to
// the same answers).
type index struct {
	exact    map[names.Kind]map[string]int   // kind → pattern → position of its first rule
	wildcard map[names.Kind]map[string][]int // kind → literal leading segments → positions, ascending
	tofu     int                             // position of the first tofu rule, -1 for none
}

// literalPrefix is the segments of pattern before its first one with a
// wildcard, joined by "/" ("" when the first has one).
func literalPrefix(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, `*?[\`) {
			return strings.Join(segs[:i], "/")
		}
	}
	return pattern
}

func newIndex(rules []*rule) *index {
	ix := &index{exact: map[names.Kind]map[string]int{}, wildcard: map[names.Kind]map[string][]int{}, tofu: -1}
	for _, kind := range []names.Kind{names.KindProvider, names.KindModule} {
		ix.exact[kind], ix.wildcard[kind] = map[string]int{}, map[string][]int{}
	}
	for i, r := range rules {
		switch {
		case r.kind == names.KindTofu:
			if ix.tofu < 0 {
				ix.tofu = i
			}
		case strings.ContainsAny(r.pattern, `*?[\`):
			w := ix.wildcard[r.kind]
			w[literalPrefix(r.pattern)] = append(w[literalPrefix(r.pattern)], i)
		default:
			if _, ok := ix.exact[r.kind][r.pattern]; !ok {
				ix.exact[r.kind][r.pattern] = i
			}
		}
	}
	return ix
}

// first is the position of the first rule of kind matching address
// (lower case), or -1.
func (ix *index) first(rules []*rule, kind names.Kind, address string) int {
	if kind == names.KindTofu {
		return ix.tofu
	}
	found, ok := ix.exact[kind][address]
	if !ok {
		found = len(rules)
	}
	// The wildcard rules filed under "", the first segment, the first
	// two, …: merged in the order of the file. No allocation: the
	// prefixes are slices of address.
	w := ix.wildcard[kind]
	var buf [8][]int
	lists := buf[:0]
	if l := w[""]; len(l) > 0 {
		lists = append(lists, l)
	}
	for i := 0; i < len(address); i++ {
		if address[i] != '/' {
			continue
		}
		if l := w[address[:i]]; len(l) > 0 {
			lists = append(lists, l)
		}
	}
	for {
		next, from := found, -1
		for k, l := range lists {
			if len(l) > 0 && l[0] < next {
				next, from = l[0], k
			}
		}
		if from < 0 {
			break
		}
		lists[from] = lists[from][1:]
		if ok, _ := path.Match(rules[next].pattern, address); ok {
			return next
		}
	}
	if found == len(rules) {
		return -1
	}
	return found
}

// scan is the first rule of kind matching address (lower case), trying
// each in the order of the file.
func scan(rules []*rule, kind names.Kind, address string) int {
	for i, r := range rules {
		if r.kind != kind {
			continue
		}
		if r.kind == names.KindTofu {
			return i
		}
		if ok, _ := path.Match(r.pattern, address); ok {
			return i
		}
	}
	return -1
}
