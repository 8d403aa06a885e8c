package attest

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

func ed25519Signer(t *testing.T) *Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	s, err := ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// verifyAsCosign checks a bundle as cosign v3 checks one with `verify
// --key --insecure-ignore-tlog` (pkg/cosign VerifyNewBundle): sigstore-go's
// verifier with the key as trusted material, no observer timestamps, the
// artifact's digest and the key as policy. It returns the statement's
// predicate type.
func verifyAsCosign(t *testing.T, raw []byte, v *Verifier, subject digest.Digest) (string, error) {
	t.Helper()
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return "", err
	}
	sv, err := signature.LoadVerifier(v.key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	key := root.NewExpiringKey(sv, time0, time0)
	trusted := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	verifier, err := verify.NewVerifier(trusted, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := digestBytes(subject)
	res, err := verifier.Verify(&b, verify.NewPolicy(verify.WithArtifactDigest("sha256", d), verify.WithKey()))
	if err != nil {
		return "", err
	}
	return res.Statement.GetPredicateType(), nil
}

// What Attach writes besides the tag schema: two Sigstore bundle
// referrers of the root in cosign v3's form — sigstore-go (cosign v3's
// verifier) accepts them with the key and refuses them with another — and
// each form alone verifies (a copy that kept only one). Complete wants
// both; attaching again writes no second pair of referrers.
func TestAttachWritesReferrers(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]*Signer{"ecdsa": ecdsaSigner(t), "ed25519": ed25519Signer(t)} {
		t.Run(name, func(t *testing.T) {
			v, other := s.Public(), ecdsaSigner(t).Public()
			onlyRefs, onlyTags, both := layout(t), layout(t), layout(t)
			root := pushRoot(t, onlyRefs)
			for _, repo := range []oci.Repository{onlyTags, both} {
				if got := pushRoot(t, repo); got != root {
					t.Fatalf("roots differ: %s, %s", got, root)
				}
			}
			a, err := Sign(s, "example.com/acme/hello", root, testPredicateType, map[string]string{"k": "v"})
			if err != nil {
				t.Fatal(err)
			}
			sigRef, attRef, err := a.Refer(ctx, onlyRefs)
			if err != nil || sigRef == "" || attRef == "" {
				t.Fatalf("Refer: %s, %s, %v", sigRef, attRef, err)
			}
			if _, err := a.Tag(ctx, onlyTags); err != nil {
				t.Fatal(err)
			}
			if layers, _ := attach.ReadAttachment(ctx, onlyRefs, root, attach.CosignAttestations); len(layers) != 0 {
				t.Errorf("Refer wrote the tag schema too: %d .att layers", len(layers))
			}
			for name, repo := range map[string]oci.Repository{"referrers only": onlyRefs, "tag schema only": onlyTags} {
				if r, err := Verify(ctx, repo, root, v, testPredicateType); err != nil || !r.OK() || string(r.Statement.Predicate) != `{"k":"v"}` {
					t.Errorf("%s: Verify = %+v, %v", name, r, err)
				}
				if r, _ := Verify(ctx, repo, root, other, testPredicateType); r.Signature == nil || r.Attestation == nil {
					t.Errorf("%s: another key verified: %+v", name, r)
				}
				if ok, err := Complete(ctx, repo, root, v, testPredicateType); ok || err != nil {
					t.Errorf("%s: Complete = %v, %v; want false (one form only)", name, ok, err)
				}
			}

			held, err := attach.ReadReferrers(ctx, onlyRefs, root, attach.ArtifactTypeSigstoreBundle)
			if err != nil || len(held.Items) != 2 {
				t.Fatalf("%d bundle referrers, %v", len(held.Items), err)
			}
			subject, _ := onlyRefs.Resolve(ctx, root.String())
			want := map[digest.Digest]string{sigRef: CosignSignPredicateType, attRef: testPredicateType}
			for _, r := range held.Items {
				m := fetchManifest(t, onlyRefs, r.Descriptor)
				pt := want[r.Descriptor.Digest]
				if m.ArtifactType != attach.ArtifactTypeSigstoreBundle || m.Config.MediaType != ocispec.MediaTypeEmptyJSON ||
					m.Subject == nil || m.Subject.Digest != root || m.Subject.MediaType != subject.MediaType || m.Subject.Size != subject.Size ||
					m.Annotations[AnnotationBundlePredicateType] != pt || m.Annotations[annotationBundleContent] != "dsse-envelope" || m.Annotations[ocispec.AnnotationCreated] == "" {
					t.Errorf("referrer %s is not laid out as cosign v3 lays one out: %+v", r.Descriptor.Digest, m)
				}
				var b sgbundle.Bundle
				der, _ := x509.MarshalPKIXPublicKey(v.key)
				sum := sha256.Sum256(der)
				if err := b.UnmarshalJSON(r.Layers[0].Payload); err != nil || b.GetVerificationMaterial().GetPublicKey().GetHint() != base64.StdEncoding.EncodeToString(sum[:]) {
					t.Errorf("referrer %s does not name the key by its hint as cosign does: %v", r.Descriptor.Digest, err)
				}
				if got, err := verifyAsCosign(t, r.Layers[0].Payload, v, root); err != nil || got != pt {
					t.Errorf("sigstore-go on referrer %s: predicate type %q, %v; want %s", r.Descriptor.Digest, got, err, pt)
				}
				if _, err := verifyAsCosign(t, r.Layers[0].Payload, other, root); err == nil {
					t.Errorf("sigstore-go accepted referrer %s with another key", r.Descriptor.Digest)
				}
				if _, err := verifyAsCosign(t, r.Layers[0].Payload, v, digest.FromString("another root")); err == nil {
					t.Errorf("sigstore-go accepted referrer %s for another digest", r.Descriptor.Digest)
				}
			}

			for range 2 {
				if _, err := Attach(ctx, both, "example.com/acme/hello", root, s, testPredicateType, 1); err != nil {
					t.Fatal(err)
				}
			}
			if ok, err := Complete(ctx, both, root, v, testPredicateType); !ok || err != nil {
				t.Errorf("Complete after Attach = %v, %v", ok, err)
			}
			if ok, _ := Complete(ctx, both, root, other, testPredicateType); ok {
				t.Error("Complete with another key")
			}
			if held, err := attach.ReadReferrers(ctx, both, root, attach.ArtifactTypeSigstoreBundle); err != nil || len(held.Items) != 2 {
				t.Errorf("after attaching twice: %d bundle referrers, %v; want 2", len(held.Items), err)
			}
			// Refer on the repository holding them already writes none.
			if s2, a2, err := a.Refer(ctx, onlyRefs); err != nil || s2 != sigRef || a2 != attRef {
				t.Errorf("Refer again: %s, %s, %v; want the referrers already there", s2, a2, err)
			}
		})
	}
}

// A bundle by the key about the root but of another predicate type
// makes Refer write the attestation all the same.
func TestReferKeepsOtherPredicateTypes(t *testing.T) {
	ctx := context.Background()
	repo := layout(t)
	root := pushRoot(t, repo)
	s := ecdsaSigner(t)
	first, err := Attach(ctx, repo, "r", root, s, testPredicateType, 1)
	if err != nil {
		t.Fatal(err)
	}
	at, err := Attach(ctx, repo, "r", root, s, testPredicateType+"/sbom", 2)
	if err != nil {
		t.Fatal(err)
	}
	held, err := attach.ReadReferrers(ctx, repo, root, attach.ArtifactTypeSigstoreBundle)
	if err != nil || len(held.Items) != 3 {
		t.Fatalf("%d bundle referrers, %v; want the signature and two attestations", len(held.Items), err)
	}
	for _, pt := range []string{testPredicateType, testPredicateType + "/sbom"} {
		if r, _ := Verify(ctx, repo, root, s.Public(), pt); !r.OK() {
			t.Errorf("%s: %+v", pt, r)
		}
	}
	if at.SignatureReferrer != first.SignatureReferrer || at.AttestationReferrer == first.AttestationReferrer || at.AttestationReferrer == "" {
		t.Errorf("second Attach %+v, first %+v: want the signature kept, a new attestation", at, first)
	}
}

var time0 time.Time

// digestBytes is a digest's hash as bytes.
func digestBytes(d digest.Digest) ([]byte, error) { return hex.DecodeString(d.Encoded()) }

// fetchManifest reads an image manifest from repo.
func fetchManifest(t *testing.T, repo oci.Repository, d ocispec.Descriptor) ocispec.Manifest {
	t.Helper()
	b, err := oci.FetchManifest(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// AttachAttestation writes the attestation alone, in both forms; it
// verifies as cosign reads it, AttestationComplete says so (Complete,
// which wants the signature too, does not), and attaching again writes no
// second bundle.
func TestAttachAttestationAlone(t *testing.T) {
	ctx := context.Background()
	s := ecdsaSigner(t)
	v, other := s.Public(), ecdsaSigner(t).Public()
	repo := layout(t)
	root := pushRoot(t, repo)
	if ok, err := AttestationComplete(ctx, repo, root, v, testPredicateType); ok || err != nil {
		t.Fatalf("before: %v %v", ok, err)
	}
	for range 2 {
		at, err := AttachAttestation(ctx, repo, "example.com/acme/hello", root, s, testPredicateType, map[string]string{"k": "v"})
		if err != nil || at.AttestationReferrer == "" || at.Attestation == "" || at.SignatureTag != "" || at.Signature != "" {
			t.Fatalf("%+v %v", at, err)
		}
	}
	held, err := attach.ReadReferrers(ctx, repo, root, attach.ArtifactTypeSigstoreBundle)
	if err != nil || len(held.Items) != 1 {
		t.Fatalf("%d bundle referrers, %v; want the attestation's", len(held.Items), err)
	}
	if got, err := verifyAsCosign(t, held.Items[0].Layers[0].Payload, v, root); err != nil || got != testPredicateType {
		t.Errorf("sigstore-go: %q %v", got, err)
	}
	if sigs, _ := attach.ReadAttachment(ctx, repo, root, attach.CosignSignatures); len(sigs) != 0 {
		t.Errorf("%d .sig layers", len(sigs))
	}
	if ok, err := AttestationComplete(ctx, repo, root, v, testPredicateType); !ok || err != nil {
		t.Errorf("AttestationComplete = %v %v", ok, err)
	}
	if ok, _ := AttestationComplete(ctx, repo, root, other, testPredicateType); ok {
		t.Error("AttestationComplete with another key")
	}
	if ok, _ := Complete(ctx, repo, root, v, testPredicateType); ok {
		t.Error("Complete without a signature")
	}
}
