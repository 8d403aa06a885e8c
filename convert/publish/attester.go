package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Attester signs and attests releases as they are stored: the signature
// and in-toto attestation `push --attest-key` writes (Sigstore bundle
// referrers and cosign's tag schema, attest.Attach). Mirror and
// pull-through (protocol/ingest) attest with one; KeyAttester is the one
// of a key.
type Attester interface {
	// Attest signs root, just stored in repo (named repository,
	// host/path), and writes the attestation of predicate under
	// predicateType.
	Attest(ctx context.Context, repo oci.Repository, repository string, root digest.Digest, predicateType string, predicate any) error
	// AttestOnly writes the attestation of predicate about subject, in
	// repo, without signing subject (attest.AttachAttestationTo): an
	// SBOM's, whose platform manifest the release's signed index names;
	// fresh says the caller has just written subject, where it was not
	// (no attestation of it is looked for), and later, when not nil, is
	// what is left to write (the tag-schema form), for the caller to run
	// while it writes its tags.
	AttestOnly(ctx context.Context, repo oci.Repository, repository string, subject ocispec.Descriptor, fresh bool, predicateType string, predicate any) (later func(context.Context) error, err error)
	// Key is the public key the attestations verify with.
	Key() *attest.Verifier
}

// KeyAttester attests with a key (--attest-key): it is the Attester of
// mirror and pull-through, and signs what PushProvider, PushTofu and
// Backfill store. Each attestation written is told to Log.
type KeyAttester struct {
	Signer *attest.Signer
	// Version is oci-tofu's version, the predicates' verifier.
	Version string
	// Now is when the predicates say the release was verified (default
	// time.Now).
	Now func() time.Time
	// Log is told each signature and attestation written (nil: nobody).
	Log func(format string, args ...any)
}

// Attest is attest.Attach with the key, logged as "signed
// REPOSITORY@ROOT …".
func (k KeyAttester) Attest(ctx context.Context, repo oci.Repository, repository string, root digest.Digest, predicateType string, predicate any) error {
	at, err := attest.Attach(ctx, repo, repository, root, k.Signer, predicateType, predicate)
	if err == nil {
		k.log("signed %s@%s (%s%s) and attested it (%s%s, %s)", repository, root, at.SignatureTag, referrerNote(at.SignatureReferrer), at.AttestationTag, referrerNote(at.AttestationReferrer), predicateType)
	}
	return err
}

// AttestOnly is attest.AttachAttestationTo with the key, logged; for a
// fresh subject, the bundle referrer is written before it returns and the
// .att is started (its writes go on under ctx), later waiting for it.
func (k KeyAttester) AttestOnly(ctx context.Context, repo oci.Repository, repository string, subject ocispec.Descriptor, fresh bool, predicateType string, predicate any) (func(context.Context) error, error) {
	if !fresh {
		at, err := attest.AttachAttestationTo(ctx, repo, repository, subject, false, k.Signer, predicateType, predicate)
		if err == nil {
			k.logAttested(repository, subject.Digest, at, predicateType)
		}
		return nil, err
	}
	a, err := attest.Sign(k.Signer, repository, subject.Digest, predicateType, predicate)
	if err != nil {
		return nil, err
	}
	at := attest.Attached{AttestationTag: attach.AttachmentTag(subject.Digest, attach.CosignAttestations)}
	if at.AttestationReferrer, err = a.Describe(subject).ReferAttestation(ctx, repo, true); err != nil {
		return nil, err
	}
	// The .att is written from now on (its round trips overlap the
	// rest of the push); the caller waits for it while it tags.
	done := make(chan error, 1)
	go func() {
		var err error
		if at.Attestation, _, err = a.TagAttestation(ctx, repo, true); err == nil {
			k.logAttested(repository, subject.Digest, at, predicateType)
		}
		done <- err
	}()
	return func(wait context.Context) error {
		select {
		case err := <-done:
			return err
		case <-wait.Done():
			return wait.Err()
		}
	}, nil
}

// logAttested logs an attestation AttestOnly wrote.
func (k KeyAttester) logAttested(repository string, subject digest.Digest, at attest.Attached, predicateType string) {
	k.log("attested %s@%s (%s%s, %s)", repository, subject, at.AttestationTag, referrerNote(at.AttestationReferrer), predicateType)
}

// Key is the key's public half.
func (k KeyAttester) Key() *attest.Verifier { return k.Signer.Public() }

// now is when a predicate says the release was verified, to the second.
func (k KeyAttester) now() time.Time {
	t := time.Now()
	if k.Now != nil {
		t = k.Now()
	}
	return t.UTC().Truncate(time.Second)
}

func (k KeyAttester) log(format string, args ...any) {
	if k.Log != nil {
		k.Log(format, args...)
	}
}

// AttachPushed signs subject, just pushed to repo (named repository),
// and writes the attestation of predicate in both forms (attest.Attach),
// logged as the push verbs report it ("signed SUBJECT …").
func (k KeyAttester) AttachPushed(ctx context.Context, repo oci.Repository, repository string, subject digest.Digest, predicateType string, predicate any) error {
	a, err := attest.Attach(ctx, repo, repository, subject, k.Signer, predicateType, predicate)
	if err != nil {
		return fmt.Errorf("%s@%s was pushed, but signing it failed: %w", repository, subject, err)
	}
	k.reportAttached(subject, a, predicateType)
	return nil
}

// reportAttached logs what a push's attestation of subject wrote: the
// tag-schema tags and the referrers.
func (k KeyAttester) reportAttached(subject digest.Digest, a attest.Attached, predicateType string) {
	k.log("signed %s (%s%s) and attested it (%s%s, %s)", subject, a.SignatureTag, referrerNote(a.SignatureReferrer), a.AttestationTag, referrerNote(a.AttestationReferrer), predicateType)
}

// referrerNote names a referrer, when there is one.
func referrerNote(d digest.Digest) string {
	if d == "" {
		return ""
	}
	return ", referrer " + d.String()
}

// SBOMAttestation is release.SBOMOptions.Attest for a, storing in repo
// (named repository): it attests a platform manifest's SBOM, predicate
// type sbom.SPDXPredicateType with the SPDX document as the predicate
// (`cosign verify-attestation --type spdxjson` checks it), in both forms
// (Attester.AttestOnly: no signature of the platform manifest, which the
// release's signed index names); an SBOM found stored already is attested
// only when the key's attestation of it is not complete.
func SBOMAttestation(a Attester, repository string) release.SBOMAttester {
	return func(ctx context.Context, repo oci.Repository, s release.StoredSBOM) (release.SBOMAttested, error) {
		if !s.Written {
			if ok, err := attest.AttestationComplete(ctx, repo, s.Manifest.Digest, a.Key(), sbom.SPDXPredicateType); err == nil && ok {
				return release.SBOMAttested{}, nil
			}
		}
		later, err := a.AttestOnly(ctx, repo, repository, s.Manifest, s.Fresh, sbom.SPDXPredicateType, json.RawMessage(s.SPDX))
		if err != nil {
			return release.SBOMAttested{}, err
		}
		return release.SBOMAttested{Attested: true, WhileTagging: later}, nil
	}
}
