package release_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentofu/tofudl"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// OpenTofu releases follow the TofuDL client's rules, not OpenTofu's
// provider rules: for releases made with GnuPG, ReadTofu accepts exactly
// what the real client library (tofudl's Downloader.VerifyArtifact, the
// check its Download runs) accepts for every file of the release.
func TestReadTofuDecidesAsTheTofuDLClient(t *testing.T) {
	gpg := testenv.NewGnuPG(t)
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	good, err := gpg.GenKey("good <good@tofudl.invalid>", "ed25519", "sign", testenv.Never, created)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := gpg.GenKey("expired <expired@tofudl.invalid>", "ed25519", "sign", "1d", created)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"tofu_1.0.0_linux_amd64.tar.gz": []byte("tarball\n"),
		"tofu_1.0.0_linux_amd64.zip":    []byte("zip\n"),
	}
	line := func(name, sep string) string {
		s := sha256.Sum256(files[name])
		return hex.EncodeToString(s[:]) + sep + name + "\n"
	}
	tgz, zip := "tofu_1.0.0_linux_amd64.tar.gz", "tofu_1.0.0_linux_amd64.zip"
	canonical := line(tgz, "  ") + line(zip, "  ")
	signed := created.Add(time.Hour)
	cases := []struct {
		name, sums, signer string
		sign               testenv.SignOptions
	}{
		{name: "canonical", sums: canonical, signer: good},
		{name: "expired key", sums: canonical, signer: expired},
		{name: "armored signature", sums: canonical, signer: good, sign: testenv.SignOptions{Armor: true}},
		{name: "expired signature", sums: canonical, signer: good, sign: testenv.SignOptions{Expire: "1d"}},
		{name: "crlf", sums: strings.ReplaceAll(canonical, "\n", "\r\n"), signer: good},
		{name: "blank lines", sums: "\n" + line(tgz, "  ") + "\n" + line(zip, "  ") + "\n", signer: good},
		{name: "binary-mode markers", sums: line(tgz, " *") + line(zip, " *"), signer: good},
		{name: "tab", sums: line(tgz, "\t") + line(zip, "  "), signer: good},
		{name: "upper-case hex", sums: strings.ToUpper(line(tgz, "  ")[:64]) + "  " + tgz + "\n" + line(zip, "  "), signer: good},
		{name: "byte order mark", sums: "\ufeff" + canonical, signer: good},
		{name: "byte order mark, zip first", sums: "\ufeff" + line(zip, "  ") + line(tgz, "  "), signer: good},
		{name: "conflicting duplicate", sums: canonical + strings.Repeat("0", 64) + "  " + zip + "\n", signer: good},
		{name: "identical duplicate", sums: canonical + line(zip, "  "), signer: good},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sign.At.IsZero() {
				tc.sign.At = signed
			}
			sig, err := gpg.DetachSign(tc.signer, []byte(tc.sums), tc.sign)
			if err != nil {
				t.Fatal(err)
			}
			armored, err := gpg.ExportPublic(tc.signer)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			write := func(name string, b []byte) {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for name, b := range files {
				write(name, b)
			}
			write("tofu_1.0.0_SHA256SUMS", []byte(tc.sums))
			write("tofu_1.0.0_SHA256SUMS.gpgsig", sig)
			clientErr := tofuDLVerifies(string(armored), files, []byte(tc.sums), sig)
			kr, err := pgp.ReadKeyring("key", armored)
			if err != nil {
				t.Fatal(err)
			}
			_, ourErr := release.ReadTofu(context.Background(), dir, []*pgp.Keyring{kr})
			if (ourErr == nil) != (clientErr == nil) {
				t.Fatalf("oci-tofu: %v; the TofuDL client: %v", ourErr, clientErr)
			}
		})
	}
}

// tofuDLVerifies runs the TofuDL client's verification on every file.
func tofuDLVerifies(armoredKey string, files map[string][]byte, sums, sig []byte) error {
	dl, err := tofudl.New(tofudl.ConfigGPGKey(armoredKey))
	if err != nil {
		return err
	}
	for name, b := range files {
		if err := dl.VerifyArtifact(name, b, sums, sig); err != nil {
			return err
		}
	}
	return nil
}
