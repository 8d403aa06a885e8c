package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// What the commands say is what happened: nothing "verified" that was
// not, a digest once, counts in words, OpenTofu releases checked as
// releases, help text as written.
func TestCLIMessagesSayWhatHappened(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")

	// --sign-key signs; nothing is verified.
	out := mustRun(t, "push", "provider", "--sign-key", testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"),
		testenv.Testdata(t, "providers", "inhouse", "0.1.0"), reg.Host+"/providers/test/inhouse")
	if strings.Contains(out, "verified") || !strings.Contains(out, "SHA256SUMS signed now with --sign-key") {
		t.Errorf("push --sign-key:\n%s", out)
	}
	// One platform is one platform.
	out = mustRun(t, "push", "provider", "--key", key, "--platform", "linux_amd64", testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/test/hello")
	if !strings.Contains(out, "signature verified (key ") || !strings.Contains(out, "1 platform to check") || strings.Contains(out, "1 platforms") {
		t.Errorf("push --platform:\n%s", out)
	}
	// A tampered zip: the signature was verified, the zip was not, and the
	// output never says the release was.
	tampered := copyDir(t, testenv.Testdata(t, "providers", "hello", "1.1.0"))
	zip := filepath.Join(tampered, "terraform-provider-hello_1.1.0_linux_amd64.zip")
	b, _ := os.ReadFile(zip)
	b[len(b)/2] ^= 0xff
	os.WriteFile(zip, b, 0o644)
	out, err := run(t, "push", "provider", "--key", key, tampered, reg.Host+"/providers/test/hello")
	if exitCode(t, err) != 1 || strings.Contains(out, "verified hello") || !strings.Contains(out, "linux_amd64.zip") {
		t.Errorf("push of a tampered zip:\n%s", out)
	}

	// pull module by digest names the digest once.
	res := pushModule(t, testenv.Testdata(t, "modules", "greeting"), reg.Host+"/modules/greeting:1.0.0")
	out = mustRun(t, "pull", "module", reg.Host+"/modules/greeting@"+res.Digest, filepath.Join(t.TempDir(), "m"))
	if strings.Count(out, res.Digest) != 1 || !strings.Contains(out, "files)") {
		t.Errorf("pull by digest:\n%s", out)
	}
	out = mustRun(t, "pull", "module", reg.Host+"/modules/greeting:1.0.0", filepath.Join(t.TempDir(), "m"))
	if !strings.Contains(out, reg.Host+"/modules/greeting:1.0.0@"+res.Digest) {
		t.Errorf("pull by tag:\n%s", out)
	}

	// OpenTofu releases pushed by push tofu pass verify, as releases.
	mustRun(t, "push", "tofu", "--quiet", "--key", key, testenv.Testdata(t, "tofu", "1.9.0"), reg.Host+"/tools/opentofu")
	out = mustRun(t, "verify", reg.Host+"/tools/opentofu")
	if !strings.Contains(out, "passes every check") || strings.Contains(out, "module") {
		t.Errorf("verify of an OpenTofu release:\n%s", out)
	}

	// Help text reads as written.
	out = mustRun(t, "serve", "--help")
	if strings.Contains(out, "ADDRess") || !strings.Contains(out, "--listen ADDRESS") {
		t.Errorf("serve --help:\n%s", out)
	}
}
