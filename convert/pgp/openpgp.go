// Package pgp is OpenPGP as OpenTofu uses it for provider releases: armored
// public key rings, binary detached signatures over SHA256SUMS checked with
// go-crypto exactly as OpenTofu 1.12 checks them (Policy: expired keys
// accepted with a warning unless expiry is enforced; revoked keys and
// armored signatures refused), the same check as the TofuDL client makes
// for OpenTofu's own releases (VerifyTofuDL), and a signer for in-house
// builds.
package pgp

import (
	"bytes"
	"fmt"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// maxKeyFile bounds key and signature files we read.
const maxKeyFile = 1 << 20

// Keyring is a set of public keys read from one armored file; Armored keeps
// the file's bytes so they can be stored and served as they were given.
type Keyring struct {
	Name     string
	Armored  []byte
	Entities openpgp.EntityList
}

// ReadKeyring parses armored public keys.
func ReadKeyring(name string, armored []byte) (*Keyring, error) {
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("%s: not an armored OpenPGP public key: %w", name, err)
	}
	if len(el) == 0 {
		return nil, fmt.Errorf("%s: holds no OpenPGP key", name)
	}
	return &Keyring{Name: name, Armored: armored, Entities: el}, nil
}

// LoadKeyring reads an armored public key file.
func LoadKeyring(path string) (*Keyring, error) {
	b, err := localfile.ReadBounded(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	return ReadKeyring(path, b)
}

// KeyID formats an OpenPGP key id as the Provider Registry Protocol does:
// 16 upper-case hex digits.
func KeyID(id uint64) string { return fmt.Sprintf("%016X", id) }

// Verified says which key verified a signature.
type Verified struct {
	Keyring *Keyring
	// KeyID is the primary key id of the signing entity.
	KeyID string
	// Expired, when not empty, says which key, subkey or signature date
	// had expired, and when: the signature was accepted anyway (Policy).
	Expired string
	// Warnings are what OpenTofu would print while accepting the signature.
	Warnings []string
}

// DearmorSignature returns a signature in binary form, unwrapping ASCII
// armor. Verification never does: OpenTofu refuses armored signatures, and
// so does Verify (ErrArmoredSignature). It is for tools and tests that
// compare a binary signature with an armored copy.
func DearmorSignature(sig []byte) ([]byte, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(sig), []byte("-----BEGIN")) {
		return sig, nil
	}
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		return nil, fmt.Errorf("reading armored signature: %w", err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(block.Body); err != nil {
		return nil, fmt.Errorf("reading armored signature: %w", err)
	}
	return b.Bytes(), nil
}

// Signer signs SHA256SUMS for in-house builds.
type Signer struct {
	Entity *openpgp.Entity
	// Public is the armored public key, served to clients.
	Public []byte
}

// LoadSigner reads an armored private key (without passphrase).
func LoadSigner(path string) (*Signer, error) {
	b, err := localfile.ReadBounded(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: not an armored OpenPGP private key: %w", path, err)
	}
	if len(el) != 1 || el[0].PrivateKey == nil {
		return nil, fmt.Errorf("%s: want exactly one private key", path)
	}
	e := el[0]
	if e.PrivateKey.Encrypted {
		return nil, fmt.Errorf("%s: the private key is protected by a passphrase; export it without one for signing", path)
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	pub.WriteByte('\n')
	return &Signer{Entity: e, Public: pub.Bytes()}, nil
}

// KeyID is the signing key's primary key id.
func (s *Signer) KeyID() string { return KeyID(s.Entity.PrimaryKey.KeyId) }

// Sign makes a binary detached signature over data, dated at t. With a
// deterministic key type (EdDSA, RSA) and a fixed t the signature is
// reproducible, which keeps pushes of the same release reproducible.
func (s *Signer) Sign(data []byte, t time.Time) ([]byte, error) {
	var b bytes.Buffer
	// No random salt notation: with EdDSA or RSA keys the same data and time
	// then give the same signature, so re-pushes keep their digests.
	deterministic := false
	cfg := &packet.Config{Time: func() time.Time { return t }, NonDeterministicSignaturesViaNotation: &deterministic}
	if err := openpgp.DetachSign(&b, s.Entity, bytes.NewReader(data), cfg); err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return b.Bytes(), nil
}
