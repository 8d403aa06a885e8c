package attest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Attached names the attachments Attach wrote.
type Attached struct {
	SignatureTag, AttestationTag     string
	Signature, Attestation           digest.Digest
	KeptSignatures, KeptAttestations int
	// SignatureReferrer and AttestationReferrer are the Sigstore bundle
	// referrers of the subject holding the signature and the attestation:
	// written now, or the key's own found there already (a re-push
	// writes no second one); empty when the repository cannot list
	// referrers.
	SignatureReferrer, AttestationReferrer digest.Digest
}

// Attach signs subject (a root just pushed to repo; repository is its
// name, host/path, for the payloads) and attests predicate under
// predicateType, in both forms cosign reads (Sign, then Attachments.Refer
// and Attachments.Tag at once): as Sigstore bundle referrers of subject,
// the form cosign v3 writes and `oras cp -r` copies, and as subject's
// .sig and .att attachments, cosign's tag schema, which older cosign and
// Kyverno read.
func Attach(ctx context.Context, repo oci.Repository, repository string, subject digest.Digest, s *Signer, predicateType string, predicate any) (Attached, error) {
	a, err := Sign(s, repository, subject, predicateType, predicate)
	if err != nil {
		return Attached{}, err
	}
	var tagged Attached
	var sigRef, attRef digest.Digest
	var g errgroup.Group
	g.Go(func() (err error) {
		sigRef, attRef, err = a.Refer(ctx, repo)
		return err
	})
	g.Go(func() (err error) {
		tagged, err = a.Tag(ctx, repo)
		return err
	})
	err = g.Wait()
	tagged.SignatureReferrer, tagged.AttestationReferrer = sigRef, attRef
	return tagged, err
}

// Attachments are one key's signature of a subject and attestation of
// it, made once (Sign) and written in two forms: Refer writes them as
// referrers, Tag in cosign's tag schema. The attestation is the same
// signed statement in both.
type Attachments struct {
	signer  *Signer
	subject digest.Digest
	// described is the subject's descriptor when known (media type and
	// size: the referrers name it without asking the registry).
	described     ocispec.Descriptor
	predicateType string
	created       time.Time
	// sig and att are the tag schema's layers.
	sig, att attach.AttachmentLayer
	// signBundle and attBundle are the bundles: a statement of cosign's
	// sign predicate type about subject, and the attestation.
	signBundle, attBundle []byte
}

// Describe tells a the subject's descriptor (media type and size), so
// that its referrers name it without asking the registry; a descriptor
// of another digest is ignored.
func (a *Attachments) Describe(d ocispec.Descriptor) *Attachments {
	if d.Digest == a.subject {
		a.described = d
	}
	return a
}

// Sign makes s's signature of subject (in repository: host/path) and
// its attestation of predicate under predicateType, in both forms; it
// writes nothing.
func Sign(s *Signer, repository string, subject digest.Digest, predicateType string, predicate any) (*Attachments, error) {
	sig, err := signatureLayer(s, repository, subject)
	if err != nil {
		return nil, err
	}
	pred, err := json.Marshal(predicate)
	if err != nil {
		return nil, err
	}
	about := []Subject{{Name: repository, Digest: map[string]string{string(subject.Algorithm()): subject.Encoded()}}}
	att, err := signStatement(s, Statement{Type: StatementType, Subject: about, PredicateType: predicateType, Predicate: pred})
	if err != nil {
		return nil, err
	}
	env, err := att.json()
	if err != nil {
		return nil, err
	}
	// What `cosign sign` signs in a bundle: a statement of its sign
	// predicate type, with an empty predicate, about the digest.
	signSt, err := signStatement(s, Statement{Type: StatementType, Subject: about, PredicateType: CosignSignPredicateType, Predicate: json.RawMessage(`{}`)})
	if err != nil {
		return nil, err
	}
	a := &Attachments{signer: s, subject: subject, predicateType: predicateType, created: time.Now(), sig: sig,
		att: attach.AttachmentLayer{
			MediaType: attach.MediaTypeDSSEEnvelope,
			Payload:   env,
			Annotations: map[string]string{
				attach.AnnotationCosignSignature: "",
				attach.AnnotationPredicateType:   predicateType,
			},
		}}
	if a.signBundle, err = sealBundle(s.Public(), signSt); err != nil {
		return nil, err
	}
	if a.attBundle, err = sealBundle(s.Public(), att); err != nil {
		return nil, err
	}
	return a, nil
}

// Tag writes the signature and the attestation in cosign's tag schema:
// subject's .sig and .att attachments. Layers other keys made are kept,
// as cosign keeps them; those this key made earlier for subject (a
// signature, an attestation of the same predicate type) are replaced, so
// re-pushing does not pile them up.
func (a *Attachments) Tag(ctx context.Context, repo oci.Repository) (Attached, error) {
	at := Attached{SignatureTag: attach.AttachmentTag(a.subject, attach.CosignSignatures), AttestationTag: attach.AttachmentTag(a.subject, attach.CosignAttestations)}
	v := a.signer.Public()
	// The two tags are independent: written at once, their round trips and
	// settling times (oci.Push) overlap.
	var g errgroup.Group
	g.Go(func() (err error) {
		at.Signature, at.KeptSignatures, err = replaceOwn(ctx, repo, a.subject, attach.CosignSignatures, a.sig, v, a.predicateType)
		return err
	})
	g.Go(func() (err error) {
		at.Attestation, at.KeptAttestations, err = replaceOwn(ctx, repo, a.subject, attach.CosignAttestations, a.att, v, a.predicateType)
		return err
	})
	return at, g.Wait()
}

// Refer writes the signature and the attestation as Sigstore bundle
// referrers of subject (attach.WriteReferrer), as cosign v3 writes them,
// each unless the repository already holds the key's bundle of its
// predicate type about subject: a referrer cannot be replaced (only
// deleted, which registries often refuse), so the first stays and a
// re-push writes no second. It returns the two referrers' digests, none
// when the repository cannot list referrers.
func (a *Attachments) Refer(ctx context.Context, repo oci.Repository) (sig, att digest.Digest, err error) {
	held, err := attach.ReadReferrers(ctx, repo, a.subject, attach.ArtifactTypeSigstoreBundle)
	if err != nil || held.Unsupported {
		return "", "", err
	}
	// At once: both change the one index of referrers a registry without
	// the API keeps under sha256-<hex>, which oras-go rewrites for the
	// two together, or one after the other, never one over the other
	// (its changes to one index are merged within a repository object);
	// an OCI layout writes its index.json under a lock.
	var g errgroup.Group
	g.Go(func() (err error) {
		sig, err = a.referBundle(ctx, repo, held, a.signBundle, CosignSignPredicateType)
		return err
	})
	g.Go(func() (err error) {
		att, err = a.referBundle(ctx, repo, held, a.attBundle, a.predicateType)
		return err
	})
	if err := g.Wait(); err != nil {
		return "", "", err
	}
	return sig, att, nil
}

// referBundle writes a bundle of predicateType as a referrer of the
// subject, unless held (the subject's bundle referrers) has the key's.
func (a *Attachments) referBundle(ctx context.Context, repo oci.Repository, held attach.Referrers, bundle []byte, predicateType string) (digest.Digest, error) {
	v := a.signer.Public()
	for _, r := range held.Items {
		if st, err := openBundleReferrer(r, v); err == nil && st.covers(a.subject) && st.PredicateType == predicateType {
			return r.Descriptor.Digest, nil
		}
	}
	layer := attach.AttachmentLayer{MediaType: attach.ArtifactTypeSigstoreBundle, Payload: bundle}
	d, err := attach.WriteReferrer(ctx, repo, a.subjectDescriptor(), attach.ArtifactTypeSigstoreBundle, []attach.AttachmentLayer{layer}, bundleAnnotations(predicateType, a.created))
	return d.Digest, err
}

// subjectDescriptor is what the referrers name as their subject: the
// descriptor Describe gave, else the digest (the registry is asked).
func (a *Attachments) subjectDescriptor() ocispec.Descriptor {
	if a.described.Digest == a.subject {
		return a.described
	}
	return ocispec.Descriptor{Digest: a.subject}
}

// AttachAttestation is Attach without the signature: s's attestation of
// predicate about subject, in both forms (a Sigstore bundle referrer and
// the .att tag), as `cosign verify-attestation` reads it; no .sig, no
// signature bundle. For a subject attested where its signature is
// elsewhere: a platform manifest, named by the release's signed index,
// whose SBOM is attested (half the writes of Attach, on each platform).
func AttachAttestation(ctx context.Context, repo oci.Repository, repository string, subject digest.Digest, s *Signer, predicateType string, predicate any) (Attached, error) {
	return AttachAttestationTo(ctx, repo, repository, ocispec.Descriptor{Digest: subject}, false, s, predicateType, predicate)
}

// AttachAttestationTo is AttachAttestation about subject's descriptor
// (its media type and size, when given, spare asking the registry). fresh
// says the caller has just written subject to repo, where it was not: no
// bundle and no .att of it are looked for (nothing could refer to it but
// what this push wrote). Should the .att tag exist all the same, its
// write is refused (oci.ErrTagMoved) rather than replace it unread.
func AttachAttestationTo(ctx context.Context, repo oci.Repository, repository string, subject ocispec.Descriptor, fresh bool, s *Signer, predicateType string, predicate any) (Attached, error) {
	a, err := Sign(s, repository, subject.Digest, predicateType, predicate)
	if err != nil {
		return Attached{}, err
	}
	a.Describe(subject)
	at := Attached{AttestationTag: attach.AttachmentTag(subject.Digest, attach.CosignAttestations)}
	var g errgroup.Group
	g.Go(func() (err error) {
		at.AttestationReferrer, err = a.ReferAttestation(ctx, repo, fresh)
		return err
	})
	g.Go(func() (err error) {
		at.Attestation, at.KeptAttestations, err = a.TagAttestation(ctx, repo, fresh)
		return err
	})
	return at, g.Wait()
}

// ReferAttestation writes the attestation alone (no signature) as a
// Sigstore bundle referrer of the subject, unless the repository holds
// the key's already; fresh: the subject was just written by the caller,
// none is looked for. It returns the referrer, none when the repository
// cannot list referrers.
func (a *Attachments) ReferAttestation(ctx context.Context, repo oci.Repository, fresh bool) (digest.Digest, error) {
	var held attach.Referrers
	if !fresh {
		var err error
		if held, err = attach.ReadReferrers(ctx, repo, a.subject, attach.ArtifactTypeSigstoreBundle); err != nil || held.Unsupported {
			return "", err
		}
	} else if !attach.CanListReferrers(repo) {
		return "", nil
	}
	return a.referBundle(ctx, repo, held, a.attBundle, a.predicateType)
}

// TagAttestation writes the attestation alone in cosign's tag schema: the
// subject's .att, keeping the layers other keys made (replaceOwn); fresh:
// the subject was just written by the caller, the .att is taken to be
// absent and holds ours alone (should it exist all the same, the write is
// refused: oci.ErrTagMoved). It returns the .att manifest and how many
// layers it kept.
func (a *Attachments) TagAttestation(ctx context.Context, repo oci.Repository, fresh bool) (digest.Digest, int, error) {
	if fresh {
		d, err := freshAttachment(ctx, repo, a.subject, attach.CosignAttestations, a.att)
		return d, 0, err
	}
	return replaceOwn(ctx, repo, a.subject, attach.CosignAttestations, a.att, a.signer.Public(), a.predicateType)
}

// freshAttachment writes the attachment of a subject this push has just
// written: only ours, its tag taken to be absent (Push refuses to write
// it should it exist after all).
func freshAttachment(ctx context.Context, repo oci.Repository, subject digest.Digest, kind attach.AttachmentKind, ours attach.AttachmentLayer) (digest.Digest, error) {
	desc, err := attach.ReplaceAttachment(ctx, repo, subject, kind, []attach.AttachmentLayer{ours}, "")
	return desc.Digest, err
}

// AttestationComplete is Complete for what AttachAttestation writes: v's
// attestation of predicateType about subject, in both forms.
func AttestationComplete(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, v *Verifier, predicateType string) (bool, error) {
	ev, err := readEvidence(ctx, repo, subject, true, false)
	if err == nil {
		err = ev.failed
	}
	if err != nil {
		return false, err
	}
	if !ev.bundles.Unsupported {
		if st, _ := ev.bundleStatement(v, subject, predicateType); st == nil {
			return false, nil
		}
	}
	if ev.attsErr != nil {
		return false, nil
	}
	_, why := verifyAttestations(ev.atts, v, subject, predicateType)
	return why == nil, nil
}

// Complete reports whether subject carries v's signature and v's
// attestation of predicateType in both forms Attach writes: as Sigstore
// bundle referrers (unless the repository cannot list referrers) and in
// cosign's tag schema. A release attested before referrers were written
// is not complete: attesting it again adds them. err is for failing to
// read the registry.
func Complete(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, v *Verifier, predicateType string) (bool, error) {
	ev, err := readEvidence(ctx, repo, subject, true, true)
	if err == nil {
		err = ev.failed
	}
	if err != nil {
		return false, err
	}
	if !ev.bundles.Unsupported {
		for _, pt := range []string{CosignSignPredicateType, predicateType} {
			if st, _ := ev.bundleStatement(v, subject, pt); st == nil {
				return false, nil
			}
		}
	}
	if ev.sigsErr != nil || ev.attsErr != nil || verifySignatures(ev.sigs, v, subject) != nil {
		return false, nil
	}
	_, why := verifyAttestations(ev.atts, v, subject, predicateType)
	return why == nil, nil
}

// signatureLayer is cosign's signature layer for subject.
func signatureLayer(s *Signer, repository string, subject digest.Digest) (attach.AttachmentLayer, error) {
	payload, err := signaturePayload(repository, subject)
	if err != nil {
		return attach.AttachmentLayer{}, err
	}
	sig, err := s.Sign(payload)
	if err != nil {
		return attach.AttachmentLayer{}, err
	}
	return attach.AttachmentLayer{
		MediaType:   attach.MediaTypeCosignSimpleSigning,
		Payload:     payload,
		Annotations: map[string]string{attach.AnnotationCosignSignature: base64.StdEncoding.EncodeToString(sig)},
	}, nil
}

// replaceOwn writes subject's attachment of kind with the layers held now
// that are not v's own for this subject (and predicate type), plus ours;
// it returns the manifest's digest and how many layers it kept.
func replaceOwn(ctx context.Context, repo oci.Repository, subject digest.Digest, kind attach.AttachmentKind, ours attach.AttachmentLayer, v *Verifier, predicateType string) (digest.Digest, int, error) {
	held, was, err := attach.ReadAttachmentHeld(ctx, repo, subject, kind)
	if err != nil {
		return "", 0, err
	}
	var layers []attach.AttachmentLayer
	for _, l := range held {
		if !ownLayer(l, v, subject, predicateType) {
			layers = append(layers, l)
		}
	}
	if len(layers) >= attach.MaxAttachmentLayers {
		return "", 0, fmt.Errorf("%s already holds %d signatures by other keys", attach.AttachmentTag(subject, kind), len(layers))
	}
	desc, err := attach.ReplaceAttachment(ctx, repo, subject, kind, append(layers, ours), was)
	return desc.Digest, len(layers), err
}

// ownLayer reports whether a layer is v's signature of subject, or v's
// attestation of subject with predicateType: one Attach replaces.
func ownLayer(l attach.AttachmentLayer, v *Verifier, subject digest.Digest, predicateType string) bool {
	switch l.MediaType {
	case attach.MediaTypeCosignSimpleSigning:
		d, err := checkSignatureLayer(l, v)
		return err == nil && d == subject
	case attach.MediaTypeDSSEEnvelope:
		st, err := openStatement(v, l.Payload)
		return err == nil && st.covers(subject) && st.PredicateType == predicateType
	}
	return false
}

// checkSignatureLayer checks a signature layer with v and returns the
// digest its payload names.
func checkSignatureLayer(l attach.AttachmentLayer, v *Verifier) (digest.Digest, error) {
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[attach.AnnotationCosignSignature])
	if err != nil {
		return "", fmt.Errorf("signature annotation: %w", err)
	}
	if !v.Verify(l.Payload, sig) {
		return "", errNotByKey
	}
	return signedDigest(l.Payload)
}

var errNotByKey = errors.New("no signature by the key")
