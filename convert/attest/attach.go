package attest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Attached names the attachments Attach wrote.
type Attached struct {
	SignatureTag, AttestationTag     string
	Signature, Attestation           digest.Digest
	KeptSignatures, KeptAttestations int
}

// Attach signs subject (a root just pushed to repo; repository is its
// name, host/path, for the payloads) and attests predicate under
// predicateType: it writes subject's .sig and .att attachments. Layers
// other keys made are kept, as cosign keeps them; those this key made
// earlier for subject (a signature, an attestation of the same predicate
// type) are replaced, so re-pushing does not pile them up.
func Attach(ctx context.Context, repo oci.Repository, repository string, subject digest.Digest, s *Signer, predicateType string, predicate any) (Attached, error) {
	sig, err := signatureLayer(s, repository, subject)
	if err != nil {
		return Attached{}, err
	}
	att, err := attestationLayer(s, repository, subject, predicateType, predicate)
	if err != nil {
		return Attached{}, err
	}
	a := Attached{SignatureTag: oci.AttachmentTag(subject, oci.CosignSignatures), AttestationTag: oci.AttachmentTag(subject, oci.CosignAttestations)}
	// The two tags are independent: written at once, their round trips and
	// settling times (oci.Push) overlap.
	var g errgroup.Group
	g.Go(func() (err error) {
		a.Signature, a.KeptSignatures, err = replaceOwn(ctx, repo, subject, oci.CosignSignatures, sig, s.Public(), predicateType)
		return err
	})
	g.Go(func() (err error) {
		a.Attestation, a.KeptAttestations, err = replaceOwn(ctx, repo, subject, oci.CosignAttestations, att, s.Public(), predicateType)
		return err
	})
	return a, g.Wait()
}

// signatureLayer is cosign's signature layer for subject.
func signatureLayer(s *Signer, repository string, subject digest.Digest) (oci.AttachmentLayer, error) {
	payload, err := signaturePayload(repository, subject)
	if err != nil {
		return oci.AttachmentLayer{}, err
	}
	sig, err := s.Sign(payload)
	if err != nil {
		return oci.AttachmentLayer{}, err
	}
	return oci.AttachmentLayer{
		MediaType:   oci.MediaTypeCosignSimpleSigning,
		Payload:     payload,
		Annotations: map[string]string{oci.AnnotationCosignSignature: base64.StdEncoding.EncodeToString(sig)},
	}, nil
}

// attestationLayer is cosign's attestation layer: a signed in-toto
// statement about subject.
func attestationLayer(s *Signer, repository string, subject digest.Digest, predicateType string, predicate any) (oci.AttachmentLayer, error) {
	pred, err := json.Marshal(predicate)
	if err != nil {
		return oci.AttachmentLayer{}, err
	}
	st := Statement{
		Type:          StatementType,
		Subject:       []Subject{{Name: repository, Digest: map[string]string{string(subject.Algorithm()): subject.Encoded()}}},
		PredicateType: predicateType,
		Predicate:     pred,
	}
	env, err := sealStatement(s, st)
	if err != nil {
		return oci.AttachmentLayer{}, err
	}
	return oci.AttachmentLayer{
		MediaType: oci.MediaTypeDSSEEnvelope,
		Payload:   env,
		Annotations: map[string]string{
			oci.AnnotationCosignSignature: "",
			oci.AnnotationPredicateType:   predicateType,
		},
	}, nil
}

// replaceOwn writes subject's attachment of kind with the layers held now
// that are not v's own for this subject (and predicate type), plus ours;
// it returns the manifest's digest and how many layers it kept.
func replaceOwn(ctx context.Context, repo oci.Repository, subject digest.Digest, kind oci.AttachmentKind, ours oci.AttachmentLayer, v *Verifier, predicateType string) (digest.Digest, int, error) {
	held, err := oci.ReadAttachment(ctx, repo, subject, kind)
	if err != nil {
		return "", 0, err
	}
	var layers []oci.AttachmentLayer
	for _, l := range held {
		if !ownLayer(l, v, subject, predicateType) {
			layers = append(layers, l)
		}
	}
	if len(layers) >= oci.MaxAttachmentLayers {
		return "", 0, fmt.Errorf("%s already holds %d signatures by other keys", oci.AttachmentTag(subject, kind), len(layers))
	}
	desc, err := oci.WriteAttachment(ctx, repo, subject, kind, append(layers, ours))
	return desc.Digest, len(layers), err
}

// ownLayer reports whether a layer is v's signature of subject, or v's
// attestation of subject with predicateType: one Attach replaces.
func ownLayer(l oci.AttachmentLayer, v *Verifier, subject digest.Digest, predicateType string) bool {
	switch l.MediaType {
	case oci.MediaTypeCosignSimpleSigning:
		d, err := checkSignatureLayer(l, v)
		return err == nil && d == subject
	case oci.MediaTypeDSSEEnvelope:
		st, err := openStatement(v, l.Payload)
		return err == nil && st.covers(subject) && st.PredicateType == predicateType
	}
	return false
}

// checkSignatureLayer checks a signature layer with v and returns the
// digest its payload names.
func checkSignatureLayer(l oci.AttachmentLayer, v *Verifier) (digest.Digest, error) {
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[oci.AnnotationCosignSignature])
	if err != nil {
		return "", fmt.Errorf("signature annotation: %w", err)
	}
	if !v.Verify(l.Payload, sig) {
		return "", errNotByKey
	}
	return signedDigest(l.Payload)
}

var errNotByKey = errors.New("no signature by the key")
