package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Policy is the gate's judge and pull-through's rules: the policy file
// (Live; the policy in force is read once per decision, so a reload
// takes effect at the next one) and the attestation rule (Admitted).
// Unlike the attestation rule, the policy needs the address and version,
// not the content, so the gate asks it before anything is read; rules
// with min_age or signers read facts of the stored release once its root
// is known (Facts, below). Without a policy every question is answered
// "allowed" with nothing read. What is outside the gate's concern comes
// through its fields: the registry's reads (Admitted, Each), the clock,
// the log and who counts and records the decisions (Observe).
type Policy struct {
	// Live is the policy file in force (nil: none).
	Live *policy.Live
	// Now is the clock decisions are made by (min_age).
	Now func() time.Time
	// Admitted, when set, is the attestation rule: nil when the root of a
	// stored release of a kind may be served, a refusal (store.Refused)
	// when not, else the registry failing (store.Repo.Admitted). Nil: no
	// attestation rule is configured.
	Admitted func(ctx context.Context, kind names.Kind, root source.Root) error
	// Trusted is who, besides the policy's attestation: keys and
	// keyless: identities, is trusted to say when a release entered the
	// registry (the ingest time min_age counts from).
	Trusted attest.IngestTrust
	// Vulns is the vulnerability database a rule's vulnerabilities block
	// matches the stored SBOMs against (nil: none; a policy with such a
	// block is refused at start-up then).
	Vulns *vulns.Live
	// Each calls fn for 0 ≤ i < n, at most the store's concurrency at
	// once (store.Store.Each).
	Each func(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error
	Log  *slog.Logger
	// Observe, when set, is told each decision that shaped an answer (the
	// proxy counts them and records denials for its page).
	Observe func(source.Decision)
	// Vulnerable, when set, is told what the vulnerability database
	// (its fingerprint) found in each provider version whose SBOMs a
	// decision matched: whether any platform has a known vulnerability,
	// whatever the policy does about it (the proxy counts such versions).
	Vulnerable func(address, version, fingerprint string, found bool)
}

var (
	_ Judge        = (*Policy)(nil)
	_ source.Rules = (*Policy)(nil)
)

// Version is the denial of version v of address (of a policy kind, what
// naming it for clients) by the policy, with its reason, or nil.
func (p *Policy) Version(kind names.Kind, address, what string, v names.Version) error {
	pol, gen := p.Live.CurrentWithGeneration()
	d := p.decideWith(pol, gen, kind, address, &v, true) // observed
	if d.Allow {
		return nil
	}
	return denied(kind, address, what, v, d)
}

// denied is the denial of version v of address (what naming it) by d.
func denied(kind names.Kind, address, what string, v names.Version, d policy.Decision) error {
	return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, d.Reason), Rule: d.Rule, Reason: d.Reason, AgesIn: d.AgesIn,
		Kind: kind, Address: address, Version: v.String()}
}

// Allowed are the versions of address the policy allows, the others
// logged; without a policy, vs. The policy in force when it is called
// judges every version of vs.
func (p *Policy) Allowed(kind names.Kind, address string, vs []names.Version) []names.Version {
	pol, gen := p.Live.CurrentWithGeneration() // one policy for the whole list
	if pol == nil {
		return vs
	}
	out := make([]names.Version, 0, len(vs))
	for _, v := range vs {
		d := p.decideWith(pol, gen, kind, address, &v, false)
		if !d.Allow {
			p.Log.Info("version left out by the policy", "kind", kind, "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
			continue
		}
		out = append(out, v)
	}
	return out
}

// Versions are the versions of vs the policy denies for address, with
// why (logged), and those it deprecates, with the message, as one policy
// in force judges them all; nothing without a policy.
func (p *Policy) Versions(kind names.Kind, address, what string, vs []names.Version) Verdicts {
	pol, gen := p.Live.CurrentWithGeneration()
	if pol == nil {
		return Verdicts{}
	}
	out := Verdicts{Denied: map[string]error{}}
	for _, v := range vs {
		d := p.decideWith(pol, gen, kind, address, &v, false)
		switch {
		case !d.Allow:
			p.Log.Info("version left out by the policy", "kind", string(kind), "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
			out.Denied[v.String()] = denied(kind, address, what, v, d)
		case d.Deprecated != "":
			if out.Deprecated == nil {
				out.Deprecated = map[string]string{}
			}
			out.Deprecated[v.String()] = d.Deprecated
		}
	}
	return out
}

// Platform is the denial of a platform the policy leaves out, or nil.
func (p *Policy) Platform(pr names.Provider, v names.Version, pl names.Platform) error {
	pol := p.Live.Current()
	if pol == nil {
		return nil
	}
	d := PlatformDecision(pol, pr, pl)
	if d.Allow {
		return nil
	}
	return &source.Denied{Msg: fmt.Sprintf("provider %s %s is not served for %s: %s", pr, v, pl, d.Reason), Rule: d.Rule, Reason: d.Reason}
}

// PlatformDecision is pol's word on platform pl of provider p.
func PlatformDecision(pol *policy.Policy, p names.Provider, pl names.Platform) policy.Decision {
	return pol.Platform(names.KindProvider, p.String(), pl.String())
}

// FactsRule names the rule deciding address when it reads facts of a
// stored release (min_age, signers).
func (p *Policy) FactsRule(kind names.Kind, address string) (string, bool) {
	n := p.Live.Current().Needs(kind, address)
	return n.Rule, n.Any()
}

// ReadsRoot reports whether a stored release of address is read to judge
// it: a rule with facts decides it, or attested is set and an attestation
// rule is configured.
func (p *Policy) ReadsRoot(kind names.Kind, address string, attested bool) bool {
	_, facts := p.FactsRule(kind, address)
	return facts || attested && p.Admitted != nil
}

// PullsOnlyStored reports whether the rule deciding address reads facts
// of stored releases, so nothing is served from an origin directly.
func (p *Policy) PullsOnlyStored(kind names.Kind, address string) bool {
	_, ok := p.FactsRule(kind, address)
	return ok
}

// decideWith is the decision of policy pol (generation gen) on version v
// of address (every version, when v is nil) by its version rules,
// observed. An allowing decision whose rule goes on to read facts
// (min_age, signers) is observed by FactsDecision instead, once. Without
// a policy it allows and observes nothing. One policy judges the
// versions of a listing, whatever a reload does meanwhile. Asked is
// whether v is one a request named rather than one a listing holds
// (source.Decision.Asked).
func (p *Policy) decideWith(pol *policy.Policy, gen uint64, kind names.Kind, address string, v *names.Version, asked bool) policy.Decision {
	if pol == nil {
		return policy.Decision{Allow: true, Rule: policy.DefaultRule, Reason: "no policy"}
	}
	var d policy.Decision
	if v != nil {
		d = pol.DecideVersion(kind, address, *v)
	} else {
		d = pol.Decide(kind, address, "")
	}
	if d.Allow && pol.HasFacts() && pol.Needs(kind, address).Any() {
		return d
	}
	p.observe(source.Decision{Decision: d, Policy: pol, Generation: gen, Kind: kind, Address: address, Version: v, Asked: asked})
	return d
}

func (p *Policy) observe(d source.Decision) {
	if p.Observe != nil {
		p.Observe(d)
	}
}

// Policy rules with min_age or signers decide on facts about a release,
// not its version alone: its signatures and attestations (and, for a
// provider, the publisher keys its push verified). They are read only
// when the deciding rule needs them (policy.Needs), after the version
// check and once the release's root is known: the gate asks Facts where
// it reads a stored release. Attachments are read once per root
// (bounded, cached by digest: store.Repo.Attachment); a registry failure
// while reading them fails the request (5xx), never decides. Decisions
// are made at answer time by Policy.Now; a min_age denial notes when the
// version ages in, so no cached document outlives it
// (source.NoteDecidedUntil).

// FactsDecision is the policy pol's decision on version v of address, of
// a kind, with the facts its deciding rule needs read from root; ok is
// false when the rule needs none (the version check stands). It is
// observed, and noted in ctx when it changes with time.
func (p *Policy) FactsDecision(ctx context.Context, pol *policy.Policy, kind names.Kind, address string, v names.Version, root source.Root) (d policy.Decision, ok bool, err error) {
	if !pol.HasFacts() {
		return d, false, nil
	}
	n := pol.Needs(kind, address)
	if !n.Any() {
		return d, false, nil
	}
	f, db, err := p.readFacts(ctx, pol, kind, n, root)
	if err != nil {
		return d, true, err
	}
	if db != nil && p.Vulnerable != nil {
		p.Vulnerable(address, v.String(), db.Fingerprint(), policy.HasFindings(f.Vulns))
	}
	d = pol.DecideWith(kind, address, v.String(), f, p.Now())
	source.NoteDecidedUntil(ctx, d.AgesIn)
	p.observe(source.Decision{Decision: d, Policy: pol, Generation: p.Live.Generation(), Kind: kind, Address: address, Version: &v, FromFacts: true})
	return d, true, nil
}

// Facts is the denial of a release the deciding rule's min_age, signers
// or vulnerabilities deny, with the reason; nil when they allow it or
// there are none, with the warning of the known vulnerabilities the
// rule warns of.
func (p *Policy) Facts(ctx context.Context, kind names.Kind, address, what string, v names.Version, root source.Root) (string, error) {
	d, ok, err := p.FactsDecision(ctx, p.Live.Current(), kind, address, v, root)
	if err != nil || !ok {
		return "", err
	}
	if d.Allow {
		return d.VulnWarning, nil
	}
	p.Log.Info("release denied by the policy", "kind", kind, "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
	return "", denied(kind, address, what, v, d)
}

// ReadFacts reads what n needs of root: each signer's verdict and the
// attestations min_age reads the ingest time from, all at once.
func (p *Policy) ReadFacts(ctx context.Context, pol *policy.Policy, kind names.Kind, n policy.Needs, root source.Root) (policy.Facts, error) {
	f, _, err := p.readFacts(ctx, pol, kind, n, root)
	return f, err
}

// readFacts is ReadFacts, with the vulnerability database the SBOMs
// were matched against (nil when n needs none).
func (p *Policy) readFacts(ctx context.Context, pol *policy.Policy, kind names.Kind, n policy.Needs, root source.Root) (policy.Facts, *vulns.DB, error) {
	pt := attest.PredicateType(kind)
	signed, why := make([]bool, len(n.Signers)), make([]string, len(n.Signers))
	var ingested time.Time
	reads := make([]func(context.Context) error, 0, len(n.Signers)+1)
	for i, sg := range n.Signers {
		reads = append(reads, func(ctx context.Context) (err error) {
			signed[i], why[i], err = signedBy(ctx, pol.Serial(), sg, root, pt)
			return err
		})
	}
	if n.MinAge > 0 {
		reads = append(reads, func(ctx context.Context) (err error) {
			ingested, err = p.ingestTime(ctx, pol, root, pt)
			return err
		})
	}
	var platforms []names.Platform
	var vulnFacts []policy.PlatformVulns
	var db *vulns.DB
	if n.Vulns != nil {
		if db = p.Vulns.Current(); db == nil {
			return policy.Facts{}, nil, errors.New("the policy has a vulnerabilities block but serve has no vulnerability database (--vuln-db)")
		}
		if root.Index != nil {
			platforms = slices.SortedFunc(maps.Keys(root.Index.Platforms), func(a, b names.Platform) int { return strings.Compare(a.String(), b.String()) })
		}
		vulnFacts = make([]policy.PlatformVulns, len(platforms))
		for i, pl := range platforms {
			reads = append(reads, func(ctx context.Context) (err error) {
				vulnFacts[i], err = source.PlatformVulns(ctx, db, root, pl)
				return err
			})
		}
	}
	if err := p.Each(ctx, len(reads), func(ctx context.Context, i int) error { return reads[i](ctx) }); err != nil {
		return policy.Facts{}, nil, err
	}
	f := policy.Facts{Signed: make(map[string]bool, len(n.Signers)), Why: make(map[string]string)}
	for i, sg := range n.Signers {
		f.Signed[sg.Spec] = signed[i]
		if !signed[i] && why[i] != "" {
			f.Why[sg.Spec] = why[i]
		}
	}
	f.Ingested = ingested
	f.Vulns = vulnFacts
	return f, db, nil
}

// signedBy reports whether the release at root (of predicate type pt) is
// signed by sg, and why not when the check says. Verdicts other than a
// publisher's are cached per root and signer (store.Repo.Checked): the
// same checks admission makes — a cosign key's signature as a Sigstore
// bundle referrer or a .sig tag, an attestation as a bundle or an .att
// tag, a notation trust policy, a keyless identity. The cache key names
// the policy load (serial) and the signer's entry in it: a reload that
// reads a signer's key file again never meets an earlier load's verdict.
func signedBy(ctx context.Context, serial uint64, sg *policy.Signer, root source.Root, pt string) (signed bool, why string, err error) {
	if sg.Kind == policy.SignerPublisher {
		id, err := publisherKey(ctx, root)
		return err == nil && id != "" && id == sg.KeyID, "", err
	}
	return root.Repo.Checked(ctx, fmt.Sprintf("signer %d %s", serial, sg.Spec), root.Digest, signerCheck(sg, root.Digest, pt))
}

// signerCheck is the check of a key, notation or keyless signer
// (policy.Signer.Check).
func signerCheck(sg *policy.Signer, subject digest.Digest, pt string) store.Check {
	return func(ctx context.Context, repo oci.ReadOnlyRepository, repository string) (error, error) {
		return sg.Check.Check(ctx, repo, repository, subject, pt)
	}
}

// ingestTime is when the release at root (of predicate type pt) entered
// the registry, as the earliest oci-tofu attestation of it by a trusted
// signer records (zero when none does): in a Sigstore bundle referrer or
// cosign's .att tag, read once with the reader admission uses
// (attest.EarliestIngest), cached per root and policy.
func (p *Policy) ingestTime(ctx context.Context, pol *policy.Policy, root source.Root, pt string) (time.Time, error) {
	trust := p.ingestTrust(pol)
	return root.Repo.Dated(ctx, fmt.Sprintf("the ingest time (policy #%d)", pol.Serial()), root.Digest,
		func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (time.Time, error) {
			return attest.EarliestIngest(ctx, repo, root.Digest, trust, pt)
		})
}

// ingestTrust is who is trusted to say when a release entered the
// registry: the policy's attestation: keys and keyless: identities, then
// Policy.Trusted's.
func (p *Policy) ingestTrust(pol *policy.Policy) attest.IngestTrust {
	t := pol.IngestTrust()
	t.Keys = append(slices.Clip(t.Keys), p.Trusted.Keys...)
	t.Bundles = append(slices.Clip(t.Bundles), p.Trusted.Bundles...)
	return t
}

// The attestation rule (the proxy's --require-attestation,
// --require-notation, --require-keyless): a release is served only when
// its root has an attestation of its kind's predicate type verifying
// with one of the configured keys, or satisfies one of the configured
// trusts (a notation trust policy) or keyless identities. The store
// keeps its verdicts (store.Options.Admit, Repo.Admitted: cached by
// digest); the gate asks it (Policy.Admitted) where it judges a stored
// release, so no handler knows of it.

// Admission is the store's attestation rule for keys, trusts and keyless
// identities: the attestations beside the root (bounded:
// attest.VerifyAttestation), each trust's signatures and the root's
// Sigstore bundles are read at once; any of them admits (attest.AnyOf). A
// refusal's text says what was required, then why each failed.
func Admission(keys []*attest.Verifier, trusts []attest.Checker, keyless attest.BundleChecker) store.Admit {
	words := notAdmittedWords(len(keys) > 0, len(trusts) > 0, keyless != nil)
	check := attest.AnyOf(words, admissionChecks(keys, trusts, keyless)...)
	return func(ctx context.Context, repo oci.ReadOnlyRepository, repository string, kind names.Kind, subject digest.Digest) (error, error) {
		pt := attest.PredicateType(kind) // the predicate type an attestation must have
		if pt == "" {
			return fmt.Errorf("%s (no attestation is defined for a %s)", words, kind.Noun()), nil
		}
		return check.Check(ctx, repo, repository, subject, pt)
	}
}

// StoreAdmitted is the store's verdict on root under the attestation
// rule Admission configures (store.Repo.Admitted: cached by digest): what
// Policy.Admitted is when the rule is on.
func StoreAdmitted(ctx context.Context, kind names.Kind, root source.Root) error {
	return root.Repo.Admitted(ctx, kind, root.Digest)
}

// admissionChecks are the checks the keys, trusts and keyless verifier
// configure, in the order their refusals are given: the keys', each
// trust's (named), the keyless identities'.
func admissionChecks(keys []*attest.Verifier, trusts []attest.Checker, keyless attest.BundleChecker) []attest.Checker {
	var out []attest.Checker
	if len(keys) > 0 {
		out = append(out, attest.KeyAttestation("the configured keys", keys...))
	}
	for _, t := range trusts {
		out = append(out, attest.Named(t))
	}
	if keyless != nil {
		out = append(out, keyless)
	}
	return out
}

// NotAttested is what clients are told of a release the keys refuse: for
// them it does not exist.
const NotAttested = "no attestation verifying with the configured keys"

// notAdmittedWords says what a refused release lacks.
func notAdmittedWords(keys, trusts, keyless bool) string {
	var lacks []string
	if keys {
		lacks = append(lacks, NotAttested)
	}
	if trusts {
		lacks = append(lacks, "no signature satisfying the configured trust policies")
	}
	if keyless {
		lacks = append(lacks, "no keyless attestation by the configured identities")
	}
	return strings.Join(lacks, ", nor ")
}

// Attested is the denial of the stored release of version v at root (of
// a kind; what names it for clients) when attested is set and the
// attestation rule does not admit it, naming why; nil when it is
// admitted or there is no rule.
func (p *Policy) Attested(ctx context.Context, kind names.Kind, what string, v names.Version, root source.Root, attested bool) error {
	if !attested || p.Admitted == nil {
		return nil
	}
	err := p.Admitted(ctx, kind, root)
	if r, ok := store.Refused(err); ok {
		return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, r.Reason), Rule: source.AttestationRule, Reason: r.Reason, Err: err}
	}
	return source.Missing(err, what, "%s has no version %s", what, v)
}
