package keyless

import (
	"context"
	"strings"

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

// Name is the identities the verifier accepts (ISSUER=IDENTITY, ", "
// between them), as messages name them.
func (v *Verifier) Name() string {
	names := make([]string, len(v.names))
	for i, id := range v.names {
		names[i] = id.String()
	}
	return strings.Join(names, ", ")
}

// Check is VerifyInRegistry as an attest.Checker: refusal nil when
// subject has an attestation of predicateType by one of the identities.
// Which repository holds subject does not matter.
func (v *Verifier) Check(ctx context.Context, repo oci.ReadOnlyRepository, _ string, subject digest.Digest, predicateType string) (refusal, err error) {
	_, _, refusal, err = v.VerifyInRegistry(ctx, repo, subject, predicateType)
	return refusal, err
}

var _ attest.BundleChecker = (*Verifier)(nil)

// SignerOf is VerifyInRegistry's signer alone: the OIDC issuer and
// certificate identity of the first bundle of subject that verifies
// (both "" when none does, refusal saying why). Its types are the
// standard library's, so a caller may ask it through an interface
// without importing this package (a build with the nokeyless tag leaves
// sigstore-go out).
func (v *Verifier) SignerOf(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (issuer, identity string, refusal, err error) {
	_, id, refusal, err := v.VerifyInRegistry(ctx, repo, subject, predicateType)
	if err != nil || refusal != nil {
		return "", "", refusal, err
	}
	return id.Issuer, id.Subject, nil, nil
}
