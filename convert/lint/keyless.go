package lint

import (
	"fmt"

	"github.com/opencontainers/go-digest"
)

// keylessAttestations checks root's keyless attestation by every
// identity of the options, as attestations checks keys.
func (c *checker) keylessAttestations(root digest.Digest) error {
	for _, k := range c.opts.Keyless {
		if c.predicateType() == "" {
			c.attestFinding(SeverityError, "keyless %s: not an artifact oci-tofu attests: no attestation to check", k.Name())
			continue
		}
		refusal, err := k.Check(c.ctx, c.repo, c.fullName, root, c.predicateType())
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
