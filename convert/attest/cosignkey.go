package attest

import (
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/scrypt"
)

// cosignKeyFile is the body of cosign's encrypted private key file
// (`cosign generate-key-pair`): PKCS#8 DER sealed with NaCl secretbox
// under a key derived from the password with scrypt, as
// github.com/secure-systems-lab/go-securesystemslib/encrypted writes it.
type cosignKeyFile struct {
	KDF struct {
		Name   string `json:"name"`
		Params struct {
			N int `json:"N"`
			R int `json:"r"`
			P int `json:"p"`
		} `json:"params"`
		Salt []byte `json:"salt"`
	} `json:"kdf"`
	Cipher struct {
		Name  string `json:"name"`
		Nonce []byte `json:"nonce"`
	} `json:"cipher"`
	Ciphertext []byte `json:"ciphertext"`
}

// maxScryptN bounds the work factor a key file may ask for (cosign writes
// 2^15; 2^20 needs 1 GiB of memory).
const maxScryptN = 1 << 20

// decryptCosignKey opens cosign's encrypted key file body.
func decryptCosignKey(body, password []byte) ([]byte, error) {
	var f cosignKeyFile
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("cosign key file: %w", err)
	}
	p := f.KDF.Params
	switch {
	case f.KDF.Name != "scrypt" || f.Cipher.Name != "nacl/secretbox":
		return nil, fmt.Errorf("cosign key file: unsupported kdf %q or cipher %q", f.KDF.Name, f.Cipher.Name)
	case p.N <= 1 || p.N > maxScryptN || p.R <= 0 || p.P <= 0 || p.R*p.P > 64:
		return nil, fmt.Errorf("cosign key file: scrypt parameters N=%d r=%d p=%d out of bounds", p.N, p.R, p.P)
	case len(f.Cipher.Nonce) != 24:
		return nil, errors.New("cosign key file: nonce is not 24 bytes")
	}
	k, err := scrypt.Key(password, f.KDF.Salt, p.N, p.R, p.P, 32)
	if err != nil {
		return nil, fmt.Errorf("cosign key file: %w", err)
	}
	var key [32]byte
	var nonce [24]byte
	copy(key[:], k)
	copy(nonce[:], f.Cipher.Nonce)
	der, ok := secretbox.Open(nil, f.Ciphertext, &nonce, &key)
	if !ok {
		return nil, errors.New("cosign key file: wrong password (COSIGN_PASSWORD) or corrupt key")
	}
	return der, nil
}
