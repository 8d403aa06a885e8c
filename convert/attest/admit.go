package attest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// VerifyAttestation reads subject's .att attachment once (bounded reads,
// see oci.ReadAttachment) and returns the statement of the first layer
// that is an attestation of subject with predicateType by one of keys.
// When there is none, refusal says why (a hostile or broken attachment
// — too many layers, an oversized or corrupt layer, another subject, a
// bad signature — is a refusal, never an error). err is for failing to
// read the registry. The signature attachment (.sig) is not read: the
// attestation is itself signed by the key and names subject.
func VerifyAttestation(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, keys []*Verifier, predicateType string) (st *Statement, refusal, err error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys to verify an attestation with"), nil
	}
	atts, err := oci.ReadAttachment(ctx, repo, subject, oci.CosignAttestations)
	if err != nil {
		switch oci.Classify(err) {
		case oci.FailureInvalid: // our own checks' words (too many layers, a layer too large)
			return nil, fmt.Errorf("attestation: %w", err), nil
		case oci.FailureCorrupt, oci.FailureNotFound: // the registry's words may name its hosts
			return nil, fmt.Errorf("attestation: %s cannot be read intact (%s)", oci.AttachmentTag(subject, oci.CosignAttestations), oci.Classify(err)), nil
		}
		return nil, nil, err
	}
	var why []string
	for _, v := range keys {
		st, err := verifyAttestations(atts, v, subject, predicateType)
		if err == nil {
			return st, nil, nil
		}
		if !slices.Contains(why, err.Error()) {
			why = append(why, err.Error())
		}
	}
	return nil, errors.New(strings.Join(why, "; ")), nil
}
