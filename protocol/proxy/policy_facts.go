package proxy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Policy rules with min_age or signers decide on facts about a release,
// not its version alone: its signatures and attestations (and, for a
// provider, the publisher keys its push verified). They are read only
// when the deciding rule needs them (policy.Needs), after the version
// check (policy.go) and once the release's root is known: the held
// sources call factsDenial where they read a release and the listing
// helpers below where they list. Attachments are read once per root
// (bounded, cached by digest: store.Repo.Attachment); a registry failure
// while reading them fails the request (5xx), never decides. Decisions
// are made at answer time by Options.Now; a min_age denial notes when the
// version ages in, so no cached document outlives it (policy_clock.go).

// releaseRoot names a release's root and how to reach it.
type releaseRoot struct {
	repo    *store.Repo
	subject digest.Digest
	// pv is a provider release's index (publisher keys); nil otherwise.
	pv *oci.ProviderVersion
}

// factsDecision is the policy's decision on version v of address, of a
// kind, with the facts its deciding rule needs read from root; ok is
// false when the rule needs none (the version check stands).
func (s *responder) factsDecision(ctx context.Context, pol *policy.Policy, kind names.Kind, address string, v names.Version, root releaseRoot) (d policy.Decision, ok bool, err error) {
	if !pol.HasFacts() {
		return d, false, nil
	}
	n := pol.Needs(kind, address)
	if !n.Any() {
		return d, false, nil
	}
	f, err := s.readFacts(ctx, pol, kind, n, root)
	if err != nil {
		return d, true, err
	}
	d = pol.DecideWith(kind, address, v.String(), f, s.opts.Now())
	source.NoteDecidedUntil(ctx, d.AgesIn)
	s.countDecision(pol, s.opts.Policy.Generation(), kind, address, &v, d, true) // policy_metrics.go
	return d, true, nil
}

// factsDenial is the 404 for a release the deciding rule's min_age or
// signers deny, with the reason; nil when they allow it or there are none.
func (s *responder) factsDenial(ctx context.Context, kind names.Kind, address, what string, v names.Version, root releaseRoot) error {
	d, ok, err := s.factsDecision(ctx, s.opts.Policy.Current(), kind, address, v, root)
	if err != nil || !ok || d.Allow {
		return err
	}
	s.log.Info("release denied by the policy", "kind", kind, "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
	return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, d.Reason), Rule: d.Rule, Reason: d.Reason, AgesIn: d.AgesIn}
}

// factsWarning is a listing's word on a release the deciding rule's
// min_age or signers deny ("" when they allow it), the denial logged.
func (s *responder) factsWarning(ctx context.Context, kind names.Kind, address string, v names.Version, root releaseRoot) (string, error) {
	d, ok, err := s.factsDecision(ctx, s.opts.Policy.Current(), kind, address, v, root)
	if err != nil || !ok || d.Allow {
		return "", err
	}
	s.log.Info("version left out by the policy", "kind", kind, "address", address, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
	return fmt.Sprintf("%s is left out: %s", v, d.Reason), nil
}

// readFacts reads what n needs of root: each signer's verdict and the
// attestations min_age reads the ingest time from, all at once.
func (s *responder) readFacts(ctx context.Context, pol *policy.Policy, kind names.Kind, n policy.Needs, root releaseRoot) (policy.Facts, error) {
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
			ingested, err = s.ingestTime(ctx, pol, root, pt)
			return err
		})
	}
	if err := s.store.Each(ctx, len(reads), func(ctx context.Context, i int) error { return reads[i](ctx) }); err != nil {
		return policy.Facts{}, err
	}
	f := policy.Facts{Signed: make(map[string]bool, len(n.Signers)), Why: make(map[string]string)}
	for i, sg := range n.Signers {
		f.Signed[sg.Spec] = signed[i]
		if !signed[i] && why[i] != "" {
			f.Why[sg.Spec] = why[i]
		}
	}
	f.Ingested = ingested
	return f, nil
}

// signedBy reports whether the release at root (of predicate type pt) is
// signed by sg, and why not when the check says. Verdicts other than a
// publisher's are cached per root and signer (store.Repo.Checked): the
// same checks admission makes — a cosign key's signature as a Sigstore
// bundle referrer or a .sig tag, an attestation as a bundle or an .att
// tag, a notation trust policy, a keyless identity. The cache key names
// the policy load (serial) and the signer's entry in it: a reload that
// reads a signer's key file again never meets an earlier load's verdict.
func signedBy(ctx context.Context, serial uint64, sg *policy.Signer, root releaseRoot, pt string) (signed bool, why string, err error) {
	if sg.Kind == policy.SignerPublisher { // policy_publisher.go
		id, err := publisherKey(ctx, root)
		return err == nil && id != "" && id == sg.KeyID, "", err
	}
	return root.repo.Checked(ctx, fmt.Sprintf("signer %d %s", serial, sg.Spec), root.subject, signerCheck(sg, root.subject, pt))
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
func (s *responder) ingestTime(ctx context.Context, pol *policy.Policy, root releaseRoot, pt string) (time.Time, error) {
	trust := s.ingestTrust(pol)
	return root.repo.Dated(ctx, fmt.Sprintf("the ingest time (policy #%d)", pol.Serial()), root.subject,
		func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (time.Time, error) {
			return attest.EarliestIngest(ctx, repo, root.subject, trust, pt)
		})
}

// ingestTrust is who is trusted to say when a release entered the
// registry: the policy's attestation: keys and keyless: identities,
// --require-attestation's keys and keyless identities, and pull-through's
// attester's key.
func (s *responder) ingestTrust(pol *policy.Policy) attest.IngestTrust {
	t := pol.IngestTrust()
	t.Keys = append(slices.Clip(t.Keys), s.opts.RequireAttestation...)
	if pt := s.opts.PullThrough; pt != nil && pt.Attest != nil && pt.Attest.Attester != nil {
		t.Keys = append(t.Keys, pt.Attest.Attester.Key())
	}
	if s.opts.RequireKeyless != nil {
		t.Bundles = append(slices.Clip(t.Bundles), s.opts.RequireKeyless)
	}
	return t
}
