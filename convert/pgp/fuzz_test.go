package pgp_test

import (
	"os"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// FuzzVerifyDetached: no key file or signature (from release directories,
// registries' provenance, origin registries) makes reading or checking
// them panic, and nothing verifies that the keys did not sign.
func FuzzVerifyDetached(f *testing.F) {
	dir := testenv.Testdata(f, "providers", "hello", "1.0.0")
	sums, _ := os.ReadFile(dir + "/terraform-provider-hello_1.0.0_SHA256SUMS")
	sig, _ := os.ReadFile(dir + "/terraform-provider-hello_1.0.0_SHA256SUMS.sig")
	key, _ := os.ReadFile(testenv.Testdata(f, "keys", "gpg-signer.asc"))
	f.Add(sums, sig, key)
	f.Add(sums, []byte("-----BEGIN PGP SIGNATURE-----\n\nx\n-----END PGP SIGNATURE-----\n"), key)
	f.Add([]byte("x"), sig, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n"))
	f.Fuzz(func(t *testing.T, data, sig, key []byte) {
		pgp.DearmorSignature(sig)
		kr, err := pgp.ReadKeyring("key", key)
		if err != nil {
			return
		}
		if v, err := pgp.VerifyDetached(data, sig, []*pgp.Keyring{kr}); err == nil && v.Keyring != kr {
			t.Fatalf("verified by a key not given: %+v", v)
		}
		pgp.VerifyTofuDL(data, sig, []*pgp.Keyring{kr})
	})
}
