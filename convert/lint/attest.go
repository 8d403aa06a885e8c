package lint

import (
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
)

// AttestKey is a public key whose signature and attestation every
// artifact checked must carry (Options.AttestKeys), and the name it is
// reported by (the file it was read from).
type AttestKey struct {
	Name string
	Key  *attest.Verifier
}

// attestations checks, with every key of the options, the cosign
// signature and attestation (of the predicate type oci-tofu writes for
// this kind of artifact) of root. A missing or failing one is an error
// even under a tag OpenTofu never reads: the keys were asked for.
func (c *checker) attestations(root digest.Digest) error {
	if err := c.trusts(root); err != nil {
		return err
	}
	for _, k := range c.opts.AttestKeys {
		if c.predicateType() == "" {
			c.attestFinding(SeverityError, "key %s: not an artifact oci-tofu attests: no signature or attestation to check", k.Name)
			continue
		}
		r, err := attest.Verify(c.ctx, c.repo, root, k.Key, c.predicateType())
		if err != nil {
			return fmt.Errorf("reading the signature and attestation of %s: %w", root, err)
		}
		if r.OK() {
			c.attestFinding(SeverityOK, "%s is signed and attested (%s) by key %s", root, c.predicateType(), k.Name)
			continue
		}
		for _, e := range []error{r.Signature, r.Attestation} {
			if e != nil {
				c.attestFinding(SeverityError, "key %s: %v", k.Name, e)
			}
		}
	}
	return nil
}

// trusts checks root with every trust of the options (Notation
// signatures under a trust policy): each must be satisfied.
func (c *checker) trusts(root digest.Digest) error {
	for _, t := range c.opts.Trusts {
		refusal, err := t.Check(c.ctx, c.repo, c.fullName, root, c.predicateType())
		switch {
		case err != nil:
			return fmt.Errorf("reading the signatures of %s: %w", root, err)
		case refusal != nil:
			c.attestFinding(SeverityError, "%s: %v", t.Name(), refusal)
		default:
			c.attestFinding(SeverityOK, "%s is signed as %s requires", root, t.Name())
		}
	}
	return nil
}

// attestFinding records a finding about signatures as it is: what tags
// OpenTofu reads does not change whether the keys signed.
func (c *checker) attestFinding(sev Severity, format string, args ...any) {
	c.findings = append(c.findings, Finding{Reference: c.ref, Severity: sev, Message: fmt.Sprintf(format, args...)})
}
