package pgp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// EnforceExpirationEnv is OpenTofu's environment variable for refusing
// releases signed by expired keys; oci-tofu's commands honour it too.
const EnforceExpirationEnv = "OPENTOFU_ENFORCE_GPG_EXPIRATION"

// EnforceExpirationFromEnv reads EnforceExpirationEnv as OpenTofu does:
// only the exact value "true" enforces.
func EnforceExpirationFromEnv() bool {
	v, ok := os.LookupEnv(EnforceExpirationEnv)
	return ok && v == "true"
}

// Policy is how signatures are judged: OpenTofu 1.12's rules
// (internal/getproviders, signatureAuthentication.findSigningKey).
type Policy struct {
	// EnforceExpiration refuses a signature that verifies only with an
	// expired key or subkey, or that has expired itself. Without it such a
	// signature is accepted with a warning, as OpenTofu 1.12 does unless
	// OPENTOFU_ENFORCE_GPG_EXPIRATION=true.
	EnforceExpiration bool
	// Now is the time signatures are judged at (time.Now when nil).
	Now func() time.Time
}

// ErrArmoredSignature says a signature is ASCII-armored. OpenTofu reads
// only binary signatures and refuses armored ones ("tag byte does not
// have MSB set"), so oci-tofu refuses them too rather than vouching for a
// release OpenTofu would refuse from its origin.
var ErrArmoredSignature = errors.New("the signature is ASCII-armored, and OpenTofu reads only binary signatures: it refuses such a release (\"openpgp: invalid data: tag byte does not have MSB set\"); publish the binary form, made with `gpg --detach-sign` without --armor, or converted with `gpg --dearmor < FILE.sig > FILE.sig.bin`")

// ErrNoKey is the error for a signature checked without any public key.
var ErrNoKey = errors.New("no public key to verify the signature with")

// ErrExpired is the error for expired keys, subkeys and signatures when
// expiry is enforced.
var ErrExpired = errors.New("expiry is enforced")

// ErrWrongKey reports a signature that none of the keys made.
var ErrWrongKey = errors.New("not signed by any of these keys")

// VerifyDetached checks a binary detached signature over data as OpenTofu
// 1.12 does by default: expired keys, subkeys and signatures are accepted
// with a warning (Verified.Warnings). See Policy.Verify.
func VerifyDetached(data, sig []byte, keyrings []*Keyring) (*Verified, error) {
	return Policy{}.Verify(data, sig, keyrings)
}

// Verify checks a binary detached signature over data against each
// keyring in turn, exactly as OpenTofu checks SHA256SUMS against the keys
// its registry lists: go-crypto's CheckDetachedSignature at the current
// time; a keyring that did not make the signature is skipped; the first
// other failure (a revoked key, a bad signature, unreadable or armored
// signature data) refuses at once; a signature that verifies but only with
// an expired key, subkey or signature date is remembered, and accepted with
// a warning naming the key and its expiry if no keyring verifies it
// outright, unless p.EnforceExpiration.
func (p Policy) Verify(data, sig []byte, keyrings []*Keyring) (v *Verified, err error) {
	if len(keyrings) == 0 {
		return nil, ErrNoKey
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("reading the signature crashed the OpenPGP library (it would crash OpenTofu too): %v", r)
		}
	}()
	now := p.now()
	cfg := &packet.Config{Time: func() time.Time { return now }}
	var expired *Verified
	var tried []string
	for _, kr := range keyrings {
		signer, err := openpgp.CheckDetachedSignature(kr.Entities, bytes.NewReader(data), bytes.NewReader(sig), cfg)
		switch {
		case err == nil:
			return &Verified{Keyring: kr, KeyID: KeyID(signer.PrimaryKey.KeyId)}, nil
		case errors.Is(err, pgperrors.ErrUnknownIssuer):
			tried = append(tried, kr.Name)
		case errors.Is(err, pgperrors.ErrKeyExpired) || errors.Is(err, pgperrors.ErrSignatureExpired):
			if expired == nil {
				expired = &Verified{Keyring: kr, KeyID: KeyID(signer.PrimaryKey.KeyId), Expired: describeExpiry(signer, sig, now)}
			}
		default:
			return nil, refusal(kr, sig, err)
		}
	}
	if expired == nil {
		return nil, fmt.Errorf("signature does not verify: %w: %s", ErrWrongKey, strings.Join(tried, "; "))
	}
	if p.EnforceExpiration {
		return nil, fmt.Errorf("%s: refused because %w (as OpenTofu does with %s=true)", expired.Expired, ErrExpired, EnforceExpirationEnv)
	}
	expired.Warnings = []string{expired.Expired + `: OpenTofu 1.12 installs it with a warning ("gpg key expired, this will fail in future versions of OpenTofu") and refuses it when ` + EnforceExpirationEnv + "=true"}
	return expired, nil
}

func (p Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// refusal explains a failure OpenTofu refuses the release for.
func refusal(kr *Keyring, sig []byte, err error) error {
	if IsArmored(sig) {
		return ErrArmoredSignature
	}
	if errors.Is(err, pgperrors.ErrKeyRevoked) {
		return fmt.Errorf("signature does not verify: %s: the signing key is revoked, and OpenTofu refuses it (%v)", kr.Name, err)
	}
	return fmt.Errorf("signature does not verify: %s: %v", kr.Name, err)
}

// IsArmored reports whether a signature is ASCII-armored rather than
// binary.
func IsArmored(sig []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(sig, " \t\r\n"), []byte("-----BEGIN"))
}

// describeExpiry names what expired, and when, for a signature that
// verifies with signer's key but fails go-crypto's time checks, in the
// order go-crypto checks them (checkMessageSignatureDetails).
func describeExpiry(signer *openpgp.Entity, sig []byte, now time.Time) string {
	who := describeEntity(signer)
	s, key, ok := signingKey(signer, sig)
	if !ok {
		return "signed by key " + who + ", which has expired"
	}
	primarySelf, _ := signer.PrimarySelfSignature()
	bySubkey := key.PublicKey != signer.PrimaryKey
	switch {
	case primarySelf != nil && signer.PrimaryKey.KeyExpired(primarySelf, now):
		return "signed by key " + who + keyExpiry(signer.PrimaryKey, primarySelf)
	case bySubkey && key.SelfSignature != nil && key.PublicKey.KeyExpired(key.SelfSignature, now):
		return fmt.Sprintf("signed by subkey %s of key %s%s", KeyID(key.PublicKey.KeyId), who, keyExpiry(key.PublicKey, key.SelfSignature))
	case s.SigExpired(now):
		return fmt.Sprintf("signed by key %s with a signature made %s%s", who, stamp(s.CreationTime), sigExpiry(s))
	}
	for _, self := range []*packet.Signature{primarySelf, key.SelfSignature} {
		if self != nil && self.SigExpired(now) {
			return fmt.Sprintf("signed by key %s, whose self-signature made %s%s", who, stamp(self.CreationTime), sigExpiry(self))
		}
	}
	return "signed by key " + who + ", whose binding signature has expired"
}

// signingKey finds the signature packet and the key of signer that made
// it, as go-crypto does (KeysByIdUsage for signing).
func signingKey(signer *openpgp.Entity, sig []byte) (*packet.Signature, openpgp.Key, bool) {
	packets := packet.NewReader(bytes.NewReader(sig))
	for {
		p, err := packets.Next()
		if err != nil {
			return nil, openpgp.Key{}, false
		}
		s, ok := p.(*packet.Signature)
		if !ok || s.IssuerKeyId == nil {
			return nil, openpgp.Key{}, false
		}
		if keys := (openpgp.EntityList{signer}).KeysByIdUsage(*s.IssuerKeyId, packet.KeyFlagSign); len(keys) > 0 {
			return s, keys[0], true
		}
	}
}

// describeEntity is a key id with its primary user id.
func describeEntity(e *openpgp.Entity) string {
	id := KeyID(e.PrimaryKey.KeyId)
	if ident := e.PrimaryIdentity(); ident != nil && ident.Name != "" {
		return fmt.Sprintf("%s (%s)", id, ident.Name)
	}
	return id
}

// keyExpiry says when a key expired (or that it is dated in the future).
func keyExpiry(pk *packet.PublicKey, self *packet.Signature) string {
	if self.KeyLifetimeSecs == nil || *self.KeyLifetimeSecs == 0 {
		return fmt.Sprintf(", which is dated in the future (%s)", stamp(pk.CreationTime))
	}
	return ", which expired on " + stamp(pk.CreationTime.Add(time.Duration(*self.KeyLifetimeSecs)*time.Second))
}

// sigExpiry says when a signature expired (or that it is dated in the
// future).
func sigExpiry(s *packet.Signature) string {
	if s.SigLifetimeSecs == nil || *s.SigLifetimeSecs == 0 {
		return ", which is in the future"
	}
	return " that expired on " + stamp(s.CreationTime.Add(time.Duration(*s.SigLifetimeSecs)*time.Second))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
