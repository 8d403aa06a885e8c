package pgp

import (
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

func TestSignatureTime(t *testing.T) {
	s, err := LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	sig, err := s.Sign([]byte("data"), when)
	if err != nil {
		t.Fatal(err)
	}
	if got := SignatureTime(sig); !got.Equal(when) {
		t.Errorf("SignatureTime %v, want %v", got, when)
	}
	for _, bad := range [][]byte{nil, []byte("-----BEGIN PGP SIGNATURE-----"), {0xc2, 0xff, 0xff}} {
		if got := SignatureTime(bad); !got.IsZero() {
			t.Errorf("SignatureTime(%q) = %v, want zero", bad, got)
		}
	}
}
