package attest

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Report says whether subject's signature and attestation verify with a
// key. Signature and Attestation are nil when they do; otherwise they say
// why not.
type Report struct {
	Signature   error
	Attestation error
	// Statement is the verified attestation, when there is one.
	Statement *Statement
}

// OK reports whether both the signature and the attestation verified.
func (r Report) OK() bool { return r.Signature == nil && r.Attestation == nil }

// Verify reads subject's signatures and attestations — the Sigstore
// bundles among its referrers and its .sig and .att attachments (bounded
// reads, see attach.ReadReferrers and attach.ReadAttachment) — and checks them
// with v as cosign would: a signature by the key whose payload names
// subject; a DSSE envelope signed by the key holding an in-toto
// statement about subject with predicateType. The error is for failing
// to read the registry.
func Verify(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, v *Verifier, predicateType string) (Report, error) {
	ev, err := readEvidence(ctx, repo, subject, true, true)
	if err != nil {
		return Report{}, err
	}
	var r Report
	if r.Signature, err = ev.signature(v, subject); err != nil {
		return Report{}, err
	}
	if r.Statement, r.Attestation, err = ev.attestation(v, subject, predicateType); err != nil {
		return Report{}, err
	}
	return r, nil
}

// verifySignatures: nil when one layer is the key's signature of subject;
// otherwise the most telling reason none is.
func verifySignatures(layers []attach.AttachmentLayer, v *Verifier, subject digest.Digest) error {
	if len(layers) == 0 {
		return fmt.Errorf("no signature (%s)", attach.AttachmentTag(subject, attach.CosignSignatures))
	}
	why := errNotByKey
	for _, l := range layers {
		if l.MediaType != attach.MediaTypeCosignSimpleSigning {
			continue
		}
		d, err := checkSignatureLayer(l, v)
		switch {
		case err == nil && d == subject:
			return nil
		case err == nil:
			why = fmt.Errorf("the key's signature names %s, not %s", d, subject)
		case !errors.Is(err, errNotByKey):
			why = err
		}
	}
	return fmt.Errorf("signature: %w", why)
}

// verifyAttestations: the statement of the layer that is the key's
// attestation of subject with predicateType; otherwise why none is.
func verifyAttestations(layers []attach.AttachmentLayer, v *Verifier, subject digest.Digest, predicateType string) (*Statement, error) {
	if len(layers) == 0 {
		return nil, fmt.Errorf("no attestation (%s)", attach.AttachmentTag(subject, attach.CosignAttestations))
	}
	why := errNotByKey
	for _, l := range layers {
		if l.MediaType != attach.MediaTypeDSSEEnvelope {
			continue
		}
		st, err := openStatement(v, l.Payload)
		switch {
		case err != nil:
			if !errors.Is(err, errNotByKey) {
				why = err
			}
		case !st.covers(subject):
			why = fmt.Errorf("the key's attestation is about another subject, not %s", subject)
		case st.PredicateType != predicateType:
			why = fmt.Errorf("the key's attestation has predicate type %s, not %s", st.PredicateType, predicateType)
		default:
			return st, nil
		}
	}
	return nil, fmt.Errorf("attestation: %w", why)
}
