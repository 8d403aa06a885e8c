package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	notation "github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
)

// NotationSigner is a test CA and a code-signing certificate it issued
// (ECDSA P-256, as `notation cert generate-test` makes them), for signing
// with notation-go itself.
type NotationSigner struct {
	Root, Leaf *x509.Certificate
	key        *ecdsa.PrivateKey
}

// NewNotationSigner makes a CA and a signing certificate named name.
func NewNotationSigner(t testing.TB, name string) *NotationSigner {
	t.Helper()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA", Organization: []string{"oci-tofu tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	root := certificate(t, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name + " signer", Organization: []string{"oci-tofu tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	return &NotationSigner{Root: root, Leaf: certificate(t, leafTmpl, root, &leafKey.PublicKey, rootKey), key: leafKey}
}

func certificate(t testing.TB, tmpl, parent *x509.Certificate, pub, priv any) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ConfigDir writes a notation configuration directory trusting s: its CA
// in the trust store ca:test, and a strict trust policy
// (trustpolicy.oci.json) for scopes.
func (s *NotationSigner) ConfigDir(t testing.TB, scopes ...string) string {
	t.Helper()
	dir := t.TempDir()
	store := filepath.Join(dir, "truststore", "x509", "ca", "test")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(store, "root.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Root.Raw}))
	policy := map[string]any{"version": "1.0", "trustPolicies": []map[string]any{{
		"name": "test", "registryScopes": scopes, "signatureVerification": map[string]any{"level": "strict"},
		"trustStores": []string{"ca:test"}, "trustedIdentities": []string{"*"},
	}}}
	b, err := json.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "trustpolicy.oci.json"), b)
	return dir
}

func writeTestFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// SignLayout signs the manifest or index tag names in the OCI layout
// layoutDir with notation-go (its signer and its OCI layout repository,
// as `notation sign --oci-layout` does): a JWS envelope stored as a
// referrer, listed in index.json.
func (s *NotationSigner) SignLayout(t testing.TB, layoutDir, tag string) {
	t.Helper()
	sg, err := signer.NewGenericSigner(s.key, []*x509.Certificate{s.Leaf, s.Root})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := registry.NewOCIRepository(layoutDir, registry.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = notation.Sign(context.Background(), sg, repo, notation.SignOptions{
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"},
		ArtifactReference: tag,
	})
	if err != nil {
		t.Fatalf("notation sign %s: %v", tag, err)
	}
}
