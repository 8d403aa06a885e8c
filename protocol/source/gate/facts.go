package gate

import (
	"context"
	"errors"
	"fmt"
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
		p.Vulnerable(address, v, db.Fingerprint(), policy.HasFindings(f.Vulns))
	}
	d = pol.DecideWith(kind, address, v.String(), f, p.Now())
	source.NoteDecidedUntil(ctx, d.AgesIn)
	p.observe(Decision{Decision: d, Policy: pol, Generation: p.Live.Generation(), Kind: kind, Address: address, Version: &v, FromFacts: true})
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
	return "", denied(what, v, d)
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
