package attest

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

const testPredicateType = "https://oci-tofu.dev/attestations/test/v1"

func ecdsaSigner(t *testing.T) *Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func layout(t *testing.T) oci.Repository {
	t.Helper()
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Layout: true, Repository: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

var subject = digest.FromString("the index")

func TestAttachThenVerify(t *testing.T) {
	ctx := context.Background()
	repo := layout(t)
	subject := pushRoot(t, repo)
	s := ecdsaSigner(t)
	if _, err := Attach(ctx, repo, "example.com/acme/hello", subject, s, testPredicateType, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(ctx, repo, subject, s.Public(), testPredicateType)
	if err != nil || !r.OK() {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	if string(r.Statement.Predicate) != `{"k":"v"}` || r.Statement.Subject[0].Name != "example.com/acme/hello" {
		t.Errorf("statement %+v", r.Statement)
	}
	other := ecdsaSigner(t)
	r, err = Verify(ctx, repo, subject, other.Public(), testPredicateType)
	if err != nil || r.Signature == nil || r.Attestation == nil {
		t.Fatalf("another key's Verify = %+v, %v; want both refused", r, err)
	}
	r, _ = Verify(ctx, repo, subject, s.Public(), "https://example.com/other/v1")
	if r.Attestation == nil || !strings.Contains(r.Attestation.Error(), "predicate type") {
		t.Errorf("other predicate type: %v", r.Attestation)
	}
	r, _ = Verify(ctx, repo, digest.FromString("another index"), s.Public(), testPredicateType)
	if r.Signature == nil || r.Attestation == nil {
		t.Errorf("another subject: %+v", r)
	}
}

func TestReattachReplacesOwnKeepsOthers(t *testing.T) {
	ctx := context.Background()
	repo := layout(t)
	subject := pushRoot(t, repo)
	mine, theirs := ecdsaSigner(t), ecdsaSigner(t)
	for _, s := range []*Signer{theirs, mine, mine} {
		if _, err := Attach(ctx, repo, "r", subject, s, testPredicateType, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []attach.AttachmentKind{attach.CosignSignatures, attach.CosignAttestations} {
		layers, err := attach.ReadAttachment(ctx, repo, subject, kind)
		if err != nil || len(layers) != 2 {
			t.Errorf("%s: %d layers, %v; want theirs and one of mine", kind, len(layers), err)
		}
	}
	// The bundles: theirs and mine, a signature and an attestation each;
	// re-attaching wrote no second pair of mine.
	if held, err := attach.ReadReferrers(ctx, repo, subject, attach.ArtifactTypeSigstoreBundle); err != nil || len(held.Items) != 4 {
		t.Errorf("%d bundle referrers, %v; want 4 (two keys, a signature and an attestation each)", len(held.Items), err)
	}
	for _, s := range []*Signer{mine, theirs} {
		if r, _ := Verify(ctx, repo, subject, s.Public(), testPredicateType); !r.OK() {
			t.Errorf("Verify = %+v", r)
		}
	}
}

// writeOnly replaces subject's attachment of kind with one layer.
func writeOnly(t *testing.T, repo oci.Repository, kind attach.AttachmentKind, l attach.AttachmentLayer) {
	t.Helper()
	if _, err := attach.WriteAttachment(context.Background(), repo, subject, kind, []attach.AttachmentLayer{l}); err != nil {
		t.Fatal(err)
	}
}

func TestHostileAttachmentsAreRefused(t *testing.T) {
	ctx := context.Background()
	s := ecdsaSigner(t)
	elsewhere := digest.FromString("another index")
	sigElsewhere, _ := signatureLayer(s, "r", elsewhere)
	attElsewhere, _ := attestationLayer(s, "r", elsewhere, testPredicateType, 1)
	att, _ := attestationLayer(s, "r", subject, testPredicateType, 1)
	tampered := tamper(t, att)
	sig, _ := signatureLayer(s, "r", subject)
	sig.Payload = []byte(strings.Replace(string(sig.Payload), "cosign", "cosigN", 1))
	cases := []struct {
		name string
		kind attach.AttachmentKind
		l    attach.AttachmentLayer
		want string
	}{
		{"signature of another digest", attach.CosignSignatures, sigElsewhere, "names " + elsewhere.String()},
		{"tampered signature payload", attach.CosignSignatures, sig, "no signature by the key"},
		{"attestation of another digest", attach.CosignAttestations, attElsewhere, "another subject"},
		{"tampered attestation", attach.CosignAttestations, tampered, "no signature by the key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := layout(t)
			writeOnly(t, repo, c.kind, c.l)
			r, err := Verify(ctx, repo, subject, s.Public(), testPredicateType)
			if err != nil {
				t.Fatal(err)
			}
			got := r.Signature
			if c.kind == attach.CosignAttestations {
				got = r.Attestation
			}
			if got == nil || !strings.Contains(got.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", got, c.want)
			}
		})
	}
}

// tamper changes the predicate inside a signed envelope, keeping its signature.
func tamper(t *testing.T, l attach.AttachmentLayer) attach.AttachmentLayer {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(l.Payload, &e); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(Statement{Type: StatementType, Subject: []Subject{{Name: "r", Digest: map[string]string{"sha256": subject.Encoded()}}}, PredicateType: testPredicateType, Predicate: json.RawMessage("2")})
	e.Payload = b64(body)
	l.Payload, _ = json.Marshal(e)
	return l
}

func TestEd25519SignsPureMessages(t *testing.T) {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	s, err := ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := s.Sign([]byte("m"))
	if !ed25519.Verify(k.Public().(ed25519.PublicKey), []byte("m"), sig) {
		t.Error("Ed25519 signature is not over the message itself")
	}
	pub, _ := s.Public().PEM()
	v, err := ParseVerifier(pub)
	if err != nil || !v.Verify([]byte("m"), sig) || v.Verify([]byte("n"), sig) {
		t.Errorf("round trip through PEM: %v", err)
	}
}

func TestRefusedKeys(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	for name, in := range map[string][]byte{
		"P-384":      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		"not PEM":    []byte("hello"),
		"public key": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
	} {
		if _, err := ParseSigner(in, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// attestationLayer is the .att layer Sign makes.
func attestationLayer(s *Signer, repository string, subject digest.Digest, predicateType string, predicate any) (attach.AttachmentLayer, error) {
	a, err := Sign(s, repository, subject, predicateType, predicate)
	if err != nil {
		return attach.AttachmentLayer{}, err
	}
	return a.att, nil
}
