package pgp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The signature cases of the GnuPG corpus: Policy decides what OpenTofu
// 1.12 decides (the e2e test TestSignatureCorpusAgreesWithTofu checks the
// table against the real binary), with and without enforced expiry.
func TestPolicyDecidesTheCorpusAsTofu(t *testing.T) {
	for _, c := range testenv.SignatureCorpus(t) {
		if c.Checksums {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			sums, sig, kr := corpusFiles(t, c)
			for _, p := range []struct {
				policy pgp.Policy
				want   testenv.Decision
			}{{pgp.Policy{}, c.Tofu}, {pgp.Policy{EnforceExpiration: true}, c.TofuEnforced}} {
				v, err := p.policy.Verify(sums, sig, []*pgp.Keyring{kr})
				got := decision(v, err)
				if got != p.want {
					t.Fatalf("enforce=%v: %s (%v), OpenTofu: %s", p.policy.EnforceExpiration, got, err, p.want)
				}
				if got == testenv.AcceptedWithWarning && (!strings.Contains(v.Warnings[0], v.KeyID) || !strings.Contains(v.Warnings[0], "2024-01-02T")) {
					t.Errorf("the warning must name the key and the expiry (2024-01-02): %q", v.Warnings)
				}
				if got == testenv.Refused && p.policy.EnforceExpiration && c.Tofu == testenv.AcceptedWithWarning && !errors.Is(err, pgp.ErrExpired) {
					t.Errorf("enforced refusal does not say the key expired: %v", err)
				}
			}
		})
	}
}

func decision(v *pgp.Verified, err error) testenv.Decision {
	switch {
	case err != nil:
		return testenv.Refused
	case len(v.Warnings) > 0:
		return testenv.AcceptedWithWarning
	default:
		return testenv.Accepted
	}
}

func corpusFiles(t *testing.T, c testenv.SigCase) (sums, sig []byte, kr *pgp.Keyring) {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(c.Dir, "terraform-provider-hello_1.0.0_"+name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kr, err := pgp.LoadKeyring(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	return read("SHA256SUMS"), read("SHA256SUMS.sig"), kr
}
