package pgp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/ProtonMail/gopenpgp/v2/crypto"
)

// ErrArmoredTofuDLSignature says an OpenTofu release's .gpgsig is
// ASCII-armored: the TofuDL client reads only binary signatures.
var ErrArmoredTofuDLSignature = errors.New("the signature is ASCII-armored, and the TofuDL client (tofudl) reads only binary signatures: it refuses such a release; publish the binary form (`gpg --dearmor < FILE.gpgsig > FILE.gpgsig.bin`)")

// VerifyTofuDL checks the detached signature over an OpenTofu release's
// SHA256SUMS exactly as the TofuDL client (github.com/opentofu/tofudl, the
// reference client for OpenTofu's own releases) checks it: gopenpgp's
// KeyRing.VerifyDetached at the current time, so a binary signature only,
// made with a SHA-2 hash, by a key that has not expired or been revoked;
// unlike OpenTofu installing providers, there is no grace for expired
// keys. Each keyring is tried in turn (tofudl takes one key).
func VerifyTofuDL(data, sig []byte, keyrings []*Keyring) (v *Verified, err error) {
	if len(keyrings) == 0 {
		return nil, errors.New("no public key to verify the signature with")
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("reading the signature crashed the OpenPGP library: %v", r)
		}
	}()
	if IsArmored(sig) {
		return nil, ErrArmoredTofuDLSignature
	}
	var errs []string
	for _, kr := range keyrings {
		ring, err := tofuDLKeyRing(kr)
		if err == nil {
			err = ring.VerifyDetached(crypto.NewPlainMessage(data), crypto.NewPGPSignature(sig), crypto.GetUnixTime())
		}
		if err == nil {
			return &Verified{Keyring: kr, KeyID: issuerPrimaryKeyID(kr, sig)}, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", kr.Name, err))
	}
	return nil, fmt.Errorf("signature does not verify as the TofuDL client checks it: %s", strings.Join(errs, "; "))
}

// tofuDLKeyRing is a gopenpgp key ring holding a keyring's keys, each of
// which must be able to verify (tofudl's createKeyRing rule).
func tofuDLKeyRing(kr *Keyring) (*crypto.KeyRing, error) {
	ring, err := crypto.NewKeyRing(nil)
	if err != nil {
		return nil, err
	}
	for _, e := range kr.Entities {
		key, err := crypto.NewKeyFromEntity(e)
		if err != nil {
			return nil, err
		}
		if !key.CanVerify() {
			return nil, fmt.Errorf("key %s cannot be used for verification (expired or revoked)", KeyID(e.PrimaryKey.KeyId))
		}
		if err := ring.AddKey(key); err != nil {
			return nil, err
		}
	}
	return ring, nil
}

// issuerPrimaryKeyID is the primary key id of the keyring's entity that
// issued the signature.
func issuerPrimaryKeyID(kr *Keyring, sig []byte) string {
	p, err := packet.NewReader(bytes.NewReader(sig)).Next()
	if s, ok := p.(*packet.Signature); err == nil && ok && s.IssuerKeyId != nil {
		if keys := openpgp.EntityList(kr.Entities).KeysById(*s.IssuerKeyId); len(keys) > 0 {
			return KeyID(keys[0].Entity.PrimaryKey.KeyId)
		}
	}
	return ""
}
