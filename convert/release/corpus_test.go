package release_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Every release of the GnuPG corpus is accepted or refused as OpenTofu 1.12
// installs or refuses it (the table the e2e test checks against the real
// binary), with and without enforced expiry (by option or by context).
func TestReadProviderDecidesTheCorpusAsTofu(t *testing.T) {
	for _, c := range testenv.SignatureCorpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			kr, err := pgp.LoadKeyring(c.Key)
			if err != nil {
				t.Fatal(err)
			}
			keys := []*pgp.Keyring{kr}
			for _, run := range []struct {
				name string
				ctx  context.Context
				opts release.Options
				want testenv.Decision
			}{
				{"default", context.Background(), release.Options{Keys: keys}, c.Tofu},
				{"enforced", context.Background(), release.Options{Keys: keys, EnforceGPGExpiration: true}, c.TofuEnforced},
			} {
				rel, err := release.ReadProvider(run.ctx, c.Dir, run.opts)
				if err == nil {
					_, err = rel.Artifact(run.ctx)
				}
				got, unsignedNote := decide(rel, err)
				if got != run.want {
					t.Fatalf("%s: %s (%v), OpenTofu: %s", run.name, got, err, run.want)
				}
				if got != testenv.Refused && unsignedNote != c.TofuUnsigned {
					t.Fatalf("%s: warns that OpenTofu drops the signed hashes: %v, OpenTofu installs as verified checksum: %v (%q)", run.name, unsignedNote, c.TofuUnsigned, rel.Warnings)
				}
			}
		})
	}
}

// decide classifies a release read: refused, accepted with a warning about
// an expired key, subkey or signature, or accepted; and whether a warning
// says OpenTofu takes none of the SHA256SUMS hashes as signed.
func decide(rel *release.Provider, err error) (testenv.Decision, bool) {
	if err != nil {
		return testenv.Refused, false
	}
	d, unsigned := testenv.Accepted, false
	for _, w := range rel.Warnings {
		if strings.Contains(w, "expired on") {
			d = testenv.AcceptedWithWarning
		}
		if strings.Contains(w, `"verified checksum"`) {
			unsigned = true
		}
	}
	return d, unsigned
}

// The refusals say why, with the line and what to do.
func TestReadProviderRefusalsExplain(t *testing.T) {
	ctx := context.Background()
	want := map[string]string{
		"sums-blank-line":          "line 2 is empty: OpenTofu 1.12 crashes",
		"sums-trailing-blank-line": "line 3 is empty",
		"sums-binary-markers":      "line 1 lists *terraform-provider-hello_1.0.0_linux_amd64.zip, with sha256sum's binary-mode marker",
		"sums-bom":                 "byte order mark",
		"armored-signature":        "gpg --dearmor",
		"revoked-key":              "revoked",
	}
	for _, c := range testenv.SignatureCorpus(t) {
		text, ok := want[c.Name]
		if !ok {
			continue
		}
		kr, _ := pgp.LoadKeyring(c.Key)
		_, err := release.ReadProvider(ctx, c.Dir, release.Options{Keys: []*pgp.Keyring{kr}})
		if err == nil || !strings.Contains(err.Error(), text) {
			t.Errorf("%s: want an error containing %q, got %v", c.Name, text, err)
		}
	}
}
