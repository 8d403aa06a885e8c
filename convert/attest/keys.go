// Package attest signs what oci-tofu pushed, and checks such signatures,
// in the form cosign reads: a signature of an artifact's root (cosign's
// simple-signing payload) and an attestation (an in-toto Statement v1 in
// a DSSE envelope) saying what oci-tofu verified, both stored in cosign's
// tag schema (attach.WriteAttachment). Keys are ECDSA P-256 or Ed25519, in
// PEM (PKCS#8, SEC 1, or cosign's encrypted key file); signatures are made
// as sigstore's signature package makes them, so that `cosign verify
// --key` and `cosign verify-attestation --key` accept them.
package attest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Signer signs payloads with a private key.
type Signer struct {
	key crypto.Signer
}

// Verifier checks signatures with a public key.
type Verifier struct {
	key crypto.PublicKey
}

// LoadSigner reads a PEM private key file: PKCS#8 or SEC 1 ECDSA P-256,
// PKCS#8 Ed25519, or cosign's encrypted key file (decrypted with password).
func LoadSigner(path string, password []byte) (*Signer, error) {
	b, err := localfile.ReadBounded(path, oci.MaxSmallFile)
	if err != nil {
		return nil, err
	}
	s, err := ParseSigner(b, password)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSigner reads a PEM private key (see LoadSigner).
func ParseSigner(pemBytes, password []byte) (*Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("not a PEM private key")
	}
	der := block.Bytes
	switch block.Type {
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		var err error
		if der, err = decryptCosignKey(block.Bytes, password); err != nil {
			return nil, err
		}
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(der)
		if err != nil {
			return nil, err
		}
		return newSigner(k)
	case "PRIVATE KEY":
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key (PRIVATE KEY, EC PRIVATE KEY or cosign's ENCRYPTED SIGSTORE PRIVATE KEY)", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	return newSigner(k)
}

func newSigner(k any) (*Signer, error) {
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA key on %s: only P-256 is supported", k.Curve.Params().Name)
		}
		return &Signer{key: k}, nil
	case ed25519.PrivateKey:
		return &Signer{key: k}, nil
	}
	return nil, fmt.Errorf("%T keys are not supported: use ECDSA P-256 or Ed25519", k)
}

// Public is the signer's public key as a Verifier.
func (s *Signer) Public() *Verifier { return &Verifier{key: s.key.Public()} }

// Sign signs msg as sigstore does: ECDSA over its SHA-256 (ASN.1 DER),
// Ed25519 over the message itself.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	if _, ok := s.key.(ed25519.PrivateKey); ok {
		return s.key.Sign(nil, msg, crypto.Hash(0))
	}
	h := sha256.Sum256(msg)
	return s.key.Sign(nil, h[:], crypto.SHA256)
}

// LoadVerifier reads a PEM public key file (PKIX "PUBLIC KEY", as
// `cosign generate-key-pair` writes cosign.pub).
func LoadVerifier(path string) (*Verifier, error) {
	b, err := localfile.ReadBounded(path, oci.MaxSmallFile)
	if err != nil {
		return nil, err
	}
	v, err := ParseVerifier(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ParseVerifier reads a PEM public key.
func ParseVerifier(pemBytes []byte) (*Verifier, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM public key (PUBLIC KEY)")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	switch k := k.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA key on %s: only P-256 is supported", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("%T keys are not supported: use ECDSA P-256 or Ed25519", k)
	}
	return &Verifier{key: k}, nil
}

// PEM is the public key in PEM (PKIX), as cosign.pub holds it.
func (v *Verifier) PEM() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(v.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// Verify reports whether sig is the key's signature of msg (see Sign).
func (v *Verifier) Verify(msg, sig []byte) bool {
	switch k := v.key.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(k, msg, sig)
	case *ecdsa.PublicKey:
		h := sha256.Sum256(msg)
		return ecdsa.VerifyASN1(k, h[:], sig)
	}
	return false
}

// Equal reports whether v and o are the same public key.
func (v *Verifier) Equal(o *Verifier) bool {
	k, ok := v.key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && o != nil && k.Equal(o.key)
}
