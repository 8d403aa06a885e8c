package keyless

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
)

// VerifyInRegistry reads the Sigstore bundles stored as referrers of
// subject with the reader admission's key checks use
// (attest.VerifyBundles: bounded in number and size) and returns the
// statement of the first that verifies as an attestation of subject with
// predicateType, and who signed it. When none does, refusal says why (a
// broken or hostile referrer is a refusal, never an error); err is for
// failing to read the registry.
func (v *Verifier) VerifyInRegistry(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (st *attest.Statement, id Identity, refusal, err error) {
	signer := identified{v: v}
	st, refusal, err = attest.VerifyBundles(ctx, repo, subject, &signer, predicateType)
	return st, signer.id, refusal, err
}

// identified verifies bundles with v, keeping who signed the one that
// verified.
type identified struct {
	v  *Verifier
	id Identity
}

func (i *identified) VerifyBundle(bundleJSON []byte, subject digest.Digest, predicateType string) (*attest.Statement, error) {
	st, id, err := i.v.VerifyAttestation(bundleJSON, subject, predicateType)
	if err == nil {
		i.id = id
	}
	return st, err
}

// VerifyBundle is VerifyAttestation without the identity: the verifier as
// an attest.BundleVerifier, for reading ingest times from the bundles
// attest's evidence reader lists (attest.EarliestIngest).
func (v *Verifier) VerifyBundle(bundleJSON []byte, subject digest.Digest, predicateType string) (*attest.Statement, error) {
	st, _, err := v.VerifyAttestation(bundleJSON, subject, predicateType)
	return st, err
}

var _ attest.BundleVerifier = (*Verifier)(nil)
