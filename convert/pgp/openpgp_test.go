package pgp

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

func fixture(t testing.TB, elem ...string) string { return testenv.Testdata(t, elem...) }

func mustKeyring(t testing.TB, name string) *Keyring {
	t.Helper()
	kr, err := LoadKeyring(fixture(t, "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func readFixture(t testing.TB, elem ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixture(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyGnuPGSignature(t *testing.T) {
	sums := readFixture(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_SHA256SUMS")
	sig := readFixture(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_SHA256SUMS.sig")
	gpg := mustKeyring(t, "gpg-signer.asc")
	other := mustKeyring(t, "other.asc")

	v, err := VerifyDetached(sums, sig, []*Keyring{other, gpg})
	if err != nil {
		t.Fatalf("GnuPG signature with the right key among others: %v", err)
	}
	if v.Keyring != gpg || len(v.KeyID) != 16 || len(v.Warnings) != 0 {
		t.Fatalf("verified by %s key %s (%v)", v.Keyring.Name, v.KeyID, v.Warnings)
	}
	if _, err := VerifyDetached(sums, sig, []*Keyring{other}); err == nil || !strings.Contains(err.Error(), "not signed by any of these keys") {
		t.Fatalf("wrong key: %v", err)
	}
	tampered := append(bytes.Clone(sums), '\n')
	if _, err := VerifyDetached(tampered, sig, []*Keyring{gpg}); err == nil {
		t.Fatal("signature over tampered SHA256SUMS verified")
	}
	if _, err := VerifyDetached(sums, sig, nil); err == nil {
		t.Fatal("verified without keys")
	}
}

// OpenTofu reads only binary signatures; the armored form of a good
// signature is refused with a message saying what to do.
func TestVerifyRefusesArmoredSignature(t *testing.T) {
	sums := readFixture(t, "providers", "hello", "2.0.0-rc1", "terraform-provider-hello_2.0.0-rc1_SHA256SUMS")
	sig := readFixture(t, "providers", "hello", "2.0.0-rc1", "terraform-provider-hello_2.0.0-rc1_SHA256SUMS.sig")
	kr := mustKeyring(t, "gocrypto-signer.asc")
	if _, err := VerifyDetached(sums, sig, []*Keyring{kr}); err != nil {
		t.Fatalf("go-crypto signature: %v", err)
	}
	var armored bytes.Buffer
	w, _ := armor.Encode(&armored, openpgp.SignatureType, nil)
	w.Write(sig)
	w.Close()
	if _, err := VerifyDetached(sums, armored.Bytes(), []*Keyring{kr}); !errors.Is(err, ErrArmoredSignature) || !strings.Contains(err.Error(), "gpg --dearmor") {
		t.Fatalf("armored form of the same signature: %v", err)
	}
	if _, err := VerifyTofuDL(sums, armored.Bytes(), []*Keyring{kr}); !errors.Is(err, ErrArmoredTofuDLSignature) {
		t.Fatalf("armored signature, TofuDL rules: %v", err)
	}
	if _, err := VerifyDetached(sums, sig, []*Keyring{mustKeyring(t, "gpg-signer.asc")}); err == nil {
		t.Fatal("verified with the wrong key")
	}
}

// expiringKey makes an EdDSA key created at created that lives for life
// (0: forever), and a signature over data made at signed.
func expiringKey(t *testing.T, created time.Time, life time.Duration, data []byte, signed time.Time) (*Keyring, []byte) {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return created }, KeyLifetimeSecs: uint32(life / time.Second)}
	e, err := openpgp.NewEntity("expiring", "", "expiring@example.invalid", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, e, bytes.NewReader(data), &packet.Config{Time: func() time.Time { return signed }}); err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	e.Serialize(w)
	w.Close()
	kr, err := ReadKeyring("expiring.asc", pub.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return kr, sig.Bytes()
}

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// A key that expires after signing: valid before, accepted with a warning
// naming the key and its expiry after (OpenTofu 1.12's default), refused
// after when expiry is enforced.
func TestVerifyExpiredKeyAsTofu(t *testing.T) {
	created := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	data := []byte("content\n")
	kr, sig := expiringKey(t, created, time.Hour, data, created.Add(time.Minute))
	before, after := created.Add(30*time.Minute), created.Add(2*time.Hour)

	v, err := Policy{Now: at(before), EnforceExpiration: true}.Verify(data, sig, []*Keyring{kr})
	if err != nil || len(v.Warnings) != 0 || v.Expired != "" {
		t.Fatalf("while valid: %+v %v", v, err)
	}
	v, err = Policy{Now: at(after)}.Verify(data, sig, []*Keyring{kr})
	if err != nil {
		t.Fatalf("expired, not enforced: %v", err)
	}
	if len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], v.KeyID) || !strings.Contains(v.Warnings[0], "expired on 2025-03-01T01:00:00Z") || !strings.Contains(v.Warnings[0], EnforceExpirationEnv) {
		t.Fatalf("the warning must name the key and its expiry: %q", v.Warnings)
	}
	_, err = Policy{Now: at(after), EnforceExpiration: true}.Verify(data, sig, []*Keyring{kr})
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "expired on 2025-03-01T01:00:00Z") {
		t.Fatalf("expired, enforced: %v", err)
	}
	// A keyring that verifies outright wins over an expired one in any
	// order, as in OpenTofu; both here hold the same signer.
	good, goodSig := expiringKey(t, created, 0, data, created.Add(time.Minute))
	for _, order := range [][]*Keyring{{kr, good}, {good, kr}} {
		if v, err := (Policy{Now: at(after)}).Verify(data, goodSig, order); err != nil || v.Keyring != good || len(v.Warnings) != 0 {
			t.Fatalf("good key beside an expired one: %+v %v", v, err)
		}
	}
}

// A signature dated after now counts as expired for go-crypto, and so for
// OpenTofu: accepted with a warning.
func TestVerifySignatureFromTheFuture(t *testing.T) {
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	data := []byte("content\n")
	kr, sig := expiringKey(t, now.Add(-time.Hour), 0, data, now.Add(time.Hour))
	v, err := Policy{Now: at(now)}.Verify(data, sig, []*Keyring{kr})
	if err != nil || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "in the future") {
		t.Fatalf("%+v %v", v, err)
	}
}

func TestEnforceExpirationFromEnvAsTofu(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "TRUE": false, "1": false, "": false, "yes": false} {
		t.Setenv(EnforceExpirationEnv, value)
		if got := EnforceExpirationFromEnv(); got != want {
			t.Errorf("%s=%q: %v, want %v (OpenTofu enforces only for \"true\")", EnforceExpirationEnv, value, got, want)
		}
	}
}

func TestSignerIsReproducibleAndVerifies(t *testing.T) {
	s, err := LoadSigner(fixture(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := s.Sign([]byte("x\n"), at)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Sign([]byte("x\n"), at)
	if !bytes.Equal(a, b) {
		t.Fatal("EdDSA signatures at a fixed time differ")
	}
	pub, err := ReadKeyring("pub", s.Public)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := VerifyDetached([]byte("x\n"), a, []*Keyring{pub}); err != nil || v.KeyID != s.KeyID() {
		t.Fatalf("own signature: %v %v", v, err)
	}
	if _, err := LoadSigner(fixture(t, "keys", "gpg-signer.asc")); err == nil {
		t.Fatal("a public key was accepted as a signing key")
	}
}
