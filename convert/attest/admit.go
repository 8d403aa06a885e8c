package attest

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// VerifyAttestation reads subject's attestations once — the Sigstore
// bundles among its referrers and its .att attachment, at once (bounded
// reads, see attach.ReadReferrers and attach.ReadAttachment) — and returns the
// statement of the first that is an attestation of subject with
// predicateType by one of keys. When there is none, refusal says why (a
// hostile or broken attachment — too many layers or referrers, an
// oversized or corrupt layer, another subject, a bad signature — is a
// refusal, never an error). err is for failing to read the registry.
// Signatures (.sig, cosign's sign bundles) are not read: the attestation
// is itself signed by the key and names subject.
func VerifyAttestation(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, keys []*Verifier, predicateType string) (st *Statement, refusal, err error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys to verify an attestation with"), nil
	}
	ev, err := readEvidence(ctx, repo, subject, true, false)
	if err != nil {
		return nil, nil, err
	}
	var why []string
	for _, v := range keys {
		st, refusal, err := ev.attestation(v, subject, predicateType)
		if err != nil || refusal == nil {
			return st, nil, err
		}
		if !slices.Contains(why, refusal.Error()) {
			why = append(why, refusal.Error())
		}
	}
	return nil, errors.New(strings.Join(why, "; ")), nil
}

// VerifySignature reads subject's signatures once — the Sigstore bundles
// among its referrers (cosign v3's default) and its .sig attachment
// (cosign's tag schema), at once and bounded — and says whether one is
// v's signature of subject: refusal nil when it is, else why not (a
// hostile or broken signature is a refusal). err is for failing to read
// the registry.
func VerifySignature(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, v *Verifier) (refusal, err error) {
	ev, err := readEvidence(ctx, repo, subject, false, true)
	if err != nil {
		return nil, err
	}
	return ev.signature(v, subject)
}
