package proxy

import (
	"context"
	"fmt"
	"net/http"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Admission (Options.RequireAttestation): a release is served only when
// its root has an attestation of its kind's predicate type verifying with
// one of the configured keys. The rule lives in the store (Repo.Admitted,
// verdicts cached by digest) and is asked where the held sources read
// releases (heldProviders, moduleSource, heldTofu), so no handler knows
// of it.

// attestedKinds are the predicate types an attestation must have, by the
// kind of root it is about.
var attestedKinds = map[string]string{
	store.KindProvider: pubrelease.ProviderPredicateType,
	store.KindModule:   modulepkg.PredicateType,
	store.KindTofu:     pubrelease.TofuPredicateType,
}

// requireAttestation is the store's admission policy for keys: the .att
// attachment beside the root is read once (bounded: oci.ReadAttachment)
// and checked with every key; when none verifies and a keyless verifier
// is set, the root's Sigstore bundles are read and checked too
// (admission_keyless.go).
func requireAttestation(keys []*attest.Verifier, keyless KeylessVerifier) store.Admit {
	return func(ctx context.Context, repo oci.ReadOnlyRepository, kind string, subject digest.Digest) (error, error) {
		pt, ok := attestedKinds[kind]
		if !ok {
			return fmt.Errorf("no attestation is defined for a %s", kind), nil
		}
		var refusal error
		if len(keys) > 0 {
			var err error
			if _, refusal, err = attest.VerifyAttestation(ctx, repo, subject, keys, pt); err != nil || refusal == nil {
				return nil, err
			}
		}
		if keyless == nil {
			return refusal, nil
		}
		return keylessAdmission(ctx, keyless, repo, subject, pt, refusal)
	}
}

// notAttested is what clients are told of a release the policy refuses:
// for them it does not exist.
const notAttested = "no attestation verifying with the configured keys"

// admit refuses a provider release that is not admitted: 404 naming why.
func (h *heldProviders) admit(ctx context.Context, repo *store.Repo, p names.Provider, v names.Version, index digest.Digest) error {
	return admitted(ctx, repo, store.KindProvider, "provider "+p.String(), v, index)
}

// admitted is nil when the root subject of a kind (what, as clients name
// it, at version v) may be served, and a 404 naming why when not.
func admitted(ctx context.Context, repo *store.Repo, kind, what string, v names.Version, subject digest.Digest) error {
	err := repo.Admitted(ctx, kind, subject)
	if r, ok := store.Refused(err); ok {
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("%s %s is not served: %s (%s)", what, v, notAttested, r.Reason), err: err}
	}
	return missing(err, what, "%s has no version %s", what, v)
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
	return fmt.Sprintf("%s is left out: %s (%s)", v, notAttested, r.Reason)
}

// admittedVersions are the versions of a listing whose release is
// admitted; without a policy, all of them, with nothing read. Each
// version's index and attestation are read (cached by digest), at most
// the store's concurrency at once.
func (h *heldProviders) admittedVersions(ctx context.Context, repo *store.Repo, p names.Provider, versions []names.Version) ([]names.Version, error) {
	if !h.opts.requiresAttestation() {
		return versions, nil
	}
	keep := make([]bool, len(versions))
	err := h.store.EachVersion(ctx, versions, func(ctx context.Context, i int, v names.Version) error {
		pv, err := repo.ProviderVersion(ctx, v)
		refused := false
		if err == nil {
			refused, err = h.refusedInListing(ctx, repo, store.KindProvider, p.String(), v, pv.Index.Digest)
		}
		keep[i] = err == nil && !refused // each index by one goroutine
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
