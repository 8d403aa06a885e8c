package attest

import (
	"encoding/json"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// StatementBy is the statement of the layer among an attestation
// attachment's (attach.ReadAttachment, attach.CosignAttestations) that is v's
// attestation of subject with predicateType; otherwise the error says why
// none is. For callers that read the attachment once and check it with
// several keys.
func StatementBy(layers []attach.AttachmentLayer, v *Verifier, subject digest.Digest, predicateType string) (*Statement, error) {
	return verifyAttestations(layers, v, subject, predicateType)
}

// SignedBy is nil when one of a signature attachment's layers
// (attach.CosignSignatures) is v's cosign signature of subject; otherwise it
// says why none is.
func SignedBy(layers []attach.AttachmentLayer, v *Verifier, subject digest.Digest) error {
	return verifySignatures(layers, v, subject)
}

// IngestTime is when the release an oci-tofu statement is about entered
// the registry, as the statement records it: its predicate's attested_at
// (module packages) or verified_at (provider and OpenTofu releases, also
// when pull-through stored them). ok is false when it records none.
func IngestTime(st *Statement) (t time.Time, ok bool) {
	var p struct {
		AttestedAt string `json:"attested_at"`
		VerifiedAt string `json:"verified_at"`
	}
	if st == nil || json.Unmarshal(st.Predicate, &p) != nil {
		return t, false
	}
	for _, s := range []string{p.AttestedAt, p.VerifiedAt} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t, true
		}
	}
	return t, false
}
