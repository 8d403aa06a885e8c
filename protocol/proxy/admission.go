package proxy

import (
	"context"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
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

// attestedKinds are the predicate types an attestation must have, by the
// kind of root it is about.
var attestedKinds = map[string]string{
	store.KindProvider: pubrelease.ProviderPredicateType,
	store.KindModule:   modulepkg.PredicateType,
	store.KindTofu:     pubrelease.TofuPredicateType,
}

// admitting reports whether the options configure an admission rule.
func (o *Options) admitting() bool {
	return len(o.RequireAttestation) > 0 || len(o.RequireTrust) > 0 || o.RequireKeyless != nil
}

// admission is the store's admission policy for keys, trusts and keyless
// identities: the attestations beside the root (bounded:
// attest.VerifyAttestation), each trust's signatures and the root's
// Sigstore bundles (Options.RequireKeyless) are read at once; any of them
// admits (attest.AnyOf). A refusal's text says what was required, then
// why each failed.
func admission(keys []*attest.Verifier, trusts []attest.Checker, keyless attest.BundleChecker) store.Admit {
	words := notAdmittedWords(len(keys) > 0, len(trusts) > 0, keyless != nil)
	check := attest.AnyOf(words, admissionChecks(keys, trusts, keyless)...)
	return func(ctx context.Context, repo oci.ReadOnlyRepository, repository, kind string, subject digest.Digest) (error, error) {
		pt, ok := attestedKinds[kind]
		if !ok {
			return fmt.Errorf("%s (no attestation is defined for a %s)", words, kind), nil
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

// admit refuses a provider release that is not admitted: 404 naming why.
func (h *heldProviders) admit(ctx context.Context, repo *store.Repo, p names.Provider, v names.Version, index digest.Digest) error {
	return admitted(ctx, repo, store.KindProvider, "provider "+p.String(), v, index)
}

// attestationRule is the Rule of a denial by the attestation rule.
const attestationRule = "attestation"

// admitted is nil when the root subject of a kind (what, as clients name
// it, at version v) may be served, and a 404 naming why when not.
func admitted(ctx context.Context, repo *store.Repo, kind, what string, v names.Version, subject digest.Digest) error {
	err := repo.Admitted(ctx, kind, subject)
	if r, ok := store.Refused(err); ok {
		return &source.Denied{Msg: fmt.Sprintf("%s %s is not served: %s", what, v, r.Reason), Rule: attestationRule, Reason: r.Reason, Err: err}
	}
	return source.Missing(err, what, "%s has no version %s", what, v)
}

// refusedInListing asks, for a listing, whether version v's root subject
// (of a kind; what names it for logs) is admitted: refused is true, and
// logged, when it is not; err is a failure to ask.
func (s *responder) refusedInListing(ctx context.Context, repo *store.Repo, kind, what string, v names.Version, subject digest.Digest) (refused bool, err error) {
	err = repo.Admitted(ctx, kind, subject)
	if r, no := store.Refused(err); no {
		s.log.Info("version left out: not admitted", "kind", kind, "what", what, "version", v.String(), "reason", r.Reason)
		return true, nil
	}
	return false, err
}

// refusedWarning is the versions document's word on a version left out.
func refusedWarning(v names.Version, r *store.Refusal) string {
	return fmt.Sprintf("%s is left out: %s", v, r.Reason)
}

// admittedVersions are the versions of a listing whose release is
// admitted; without a policy, all of them, with nothing read. Each
// version's index and attestation are read (cached by digest), at most
// the store's concurrency at once.
func (h *heldProviders) admittedVersions(ctx context.Context, repo *store.Repo, p names.Provider, versions []names.Version) ([]names.Version, error) {
	if !h.opts.admitting() {
		return versions, nil
	}
	return h.keptVersions(ctx, repo, versions, func(ctx context.Context, v names.Version, pv *oci.ProviderVersion) (bool, error) {
		return h.refusedInListing(ctx, repo, store.KindProvider, p.String(), v, pv.Index.Digest)
	})
}

// keptVersions are the versions of a listing whose index drop does not
// drop, each index read (cached by digest), at most the store's
// concurrency at once. A version whose index cannot be read as a provider
// is left out; a registry failure is the error.
func (h *heldProviders) keptVersions(ctx context.Context, repo *store.Repo, versions []names.Version, drop func(ctx context.Context, v names.Version, pv *oci.ProviderVersion) (bool, error)) ([]names.Version, error) {
	keep := make([]bool, len(versions))
	err := h.store.EachVersion(ctx, versions, func(ctx context.Context, i int, v names.Version) error {
		pv, err := repo.ProviderVersion(ctx, v)
		dropped := false
		if err == nil {
			dropped, err = drop(ctx, v, pv)
		}
		keep[i] = err == nil && !dropped // each index by one goroutine
		return keepFatal(err)
	})
	if err != nil {
		return nil, err
	}
	var out []names.Version
	for i, v := range versions {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out, nil
}
