package proxy

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

// Admission (Options.RequireAttestation, Options.RequireTrust): a release
// is served only when its root has an attestation of its kind's predicate
// type verifying with one of the configured keys, or satisfies one of the
// configured trusts (a notation trust policy). The rule lives in the store
// (Repo.Admitted, verdicts cached by digest) and is asked where the held
// sources read releases (heldProviders; for modules and OpenTofu releases
// the gate of protocol/source, through policyJudge), so no
// handler knows of it.

// admitting reports whether the options configure an admission rule.
func (o *Options) admitting() bool {
	return len(o.RequireAttestation) > 0 || len(o.RequireTrust) > 0 || o.RequireKeyless != nil
}

// admission is the store's admission rule for keys, trusts and keyless
// identities: the attestations beside the root (bounded:
// attest.VerifyAttestation), each trust's signatures and the root's
// Sigstore bundles (Options.RequireKeyless) are read at once; any of them
// admits (attest.AnyOf). A refusal's text says what was required, then
// why each failed.
func admission(keys []*attest.Verifier, trusts []attest.Checker, keyless attest.BundleChecker) store.Admit {
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

// notAttested is what clients are told of a release the keys refuse: for
// them it does not exist.
const notAttested = "no attestation verifying with the configured keys"

// notAdmittedWords says what a refused release lacks.
func notAdmittedWords(keys, trusts, keyless bool) string {
	var lacks []string
	if keys {
		lacks = append(lacks, notAttested)
	}
	if trusts {
		lacks = append(lacks, "no signature satisfying the configured trust policies")
	}
	if keyless {
		lacks = append(lacks, "no keyless attestation by the configured identities")
	}
	return strings.Join(lacks, ", nor ")
}

// attestationRule is the Rule of a denial by the attestation rule.
const attestationRule = "attestation"

// admitted is nil when the root subject of a kind (what, as clients name
// it, at version v) may be served, and a 404 naming why when not.
func admitted(ctx context.Context, repo *store.Repo, kind names.Kind, what string, v names.Version, subject digest.Digest) error {
	err := repo.Admitted(ctx, kind, subject)
	if r, ok := store.Refused(err); ok {
		return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, r.Reason), Rule: attestationRule, Reason: r.Reason, Err: err}
	}
	return source.Missing(err, what, "%s has no version %s", what, v)
}

// refusedInListing asks, for a listing, whether version v's root subject
// (of a kind; what names it for logs) is admitted: refused is true, and
// logged, when it is not; err is a failure to ask.
func (s *responder) refusedInListing(ctx context.Context, repo *store.Repo, kind names.Kind, what string, v names.Version, subject digest.Digest) (refused bool, err error) {
	err = repo.Admitted(ctx, kind, subject)
	if r, no := store.Refused(err); no {
		s.log.Info("version left out: not admitted", "kind", kind.Noun(), "what", what, "version", v.String(), "reason", r.Reason)
		return true, nil
	}
	return false, err
}
