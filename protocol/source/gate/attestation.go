package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

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
