// Package attesttest makes what tests of attestations need: a fresh
// signing key.
package attesttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
)

// Signer is a fresh ECDSA P-256 attestation key, as a cosign key pair
// without a password would be.
func Signer(t testing.TB) *attest.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err := attest.ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
