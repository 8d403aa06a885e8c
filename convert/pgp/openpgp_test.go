package pgp

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

func fixture(t *testing.T, elem ...string) string { return testenv.Testdata(t, elem...) }

func mustKeyring(t *testing.T, name string) *Keyring {
	t.Helper()
	kr, err := LoadKeyring(fixture(t, "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func readFixture(t *testing.T, elem ...string) []byte {
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
	if v.Keyring != gpg || len(v.KeyID) != 16 {
		t.Fatalf("verified by %s key %s", v.Keyring.Name, v.KeyID)
	}
	if _, err := VerifyDetached(sums, sig, []*Keyring{other}); err == nil || !strings.Contains(err.Error(), "not signed by this key") {
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

func TestVerifyGoCryptoSignatureAndArmor(t *testing.T) {
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
	if _, err := VerifyDetached(sums, armored.Bytes(), []*Keyring{kr}); err != nil {
		t.Fatalf("armored form of the same signature: %v", err)
	}
	if _, err := VerifyDetached(sums, sig, []*Keyring{mustKeyring(t, "gpg-signer.asc")}); err == nil {
		t.Fatal("verified with the wrong key")
	}
}

func TestVerifyRefusesExpiredKey(t *testing.T) {
	created := time.Now().Add(-48 * time.Hour)
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return created }, KeyLifetimeSecs: 3600}
	e, err := openpgp.NewEntity("expired", "", "expired@example.invalid", cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("content\n")
	var sig bytes.Buffer
	// Signed while the key was valid; the key has expired since.
	signTime := created.Add(time.Minute)
	if err := openpgp.DetachSign(&sig, e, bytes.NewReader(data), &packet.Config{Time: func() time.Time { return signTime }}); err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	e.Serialize(w)
	w.Close()
	kr, err := ReadKeyring("expired.asc", pub.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyDetached(data, sig.Bytes(), []*Keyring{kr}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired key: want an error saying expired, got %v", err)
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
