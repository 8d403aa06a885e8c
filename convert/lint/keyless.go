package lint

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// KeylessCheck is a keyless identity whose attestation (a Sigstore bundle
// stored as a referrer) every artifact checked must carry
// (Options.Keyless). cmd supplies it from convert/keyless, so that this
// package does not link sigstore-go.
type KeylessCheck interface {
	// Name is how findings name the identity (ISSUER=IDENTITY).
	Name() string
	// VerifyKeyless: nil refusal when subject has an attestation of
	// predicateType by the identity; otherwise why not. err is for
	// failing to read the registry.
	VerifyKeyless(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (refusal, err error)
}

// keylessAttestations checks root's keyless attestation by every
// identity of the options, as attestations checks keys.
func (c *checker) keylessAttestations(root digest.Digest) error {
	for _, k := range c.opts.Keyless {
		if c.predicateType() == "" {
			c.attestFinding(SeverityError, "keyless %s: not an artifact oci-tofu attests: no attestation to check", k.Name())
			continue
		}
		refusal, err := k.VerifyKeyless(c.ctx, c.repo, root, c.predicateType())
		switch {
		case err != nil:
			return fmt.Errorf("reading the keyless attestations of %s: %w", root, err)
		case refusal != nil:
			c.attestFinding(SeverityError, "keyless %s: %v", k.Name(), refusal)
		default:
			c.attestFinding(SeverityOK, "%s is attested (%s) keylessly by %s", root, c.predicateType(), k.Name())
		}
	}
	return nil
}
