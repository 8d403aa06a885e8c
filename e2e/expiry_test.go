package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// keyLifetime is how long the key of TestKeyExpiresAfterPush lives: long
// enough to push, short enough to wait for.
const keyLifetime = 10 * time.Second

// A release pushed while its signing key was valid stays installable through
// `oci-tofu serve`'s registry protocol once the key has expired: the proxy
// serves the publisher's SHA256SUMS, signature and key as they were, and
// tofu decides as it decides from any registry (installs with its expiry
// warning; refuses with OPENTOFU_ENFORCE_GPG_EXPIRATION=true). Time
// validity is judged at ingest; serving checks integrity only.
func TestKeyExpiresAfterPush(t *testing.T) {
	gpg := testenv.NewGnuPG(t)
	key, err := gpg.GenKey("short-lived <short-lived@e2e.invalid>", "ed25519", "sign", testenv.ExpireIn(keyLifetime), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(keyLifetime)
	dir, keyFile := signedRelease(t, gpg, key)

	reg := testenv.StartRegistry(t)
	out := mustRun(t, "push", "provider", "--json", "--key", keyFile, dir, reg.Host+"/providers/expiring/hello")
	if strings.Contains(out, "expired") {
		t.Fatalf("the key was still valid at push time:\n%s", out)
	}
	template := reg.Host + "/providers/${namespace}/${type}"
	early := startServe(t, "--provider-template", template)
	if before := tofuDecision(t, early.Host, "expiring", ""); before.decision != testenv.Accepted {
		t.Fatalf("before the key expired: %s\n%s", before.decision, before.out)
	}

	time.Sleep(time.Until(expires) + 2*time.Second)
	// A proxy started after the expiry has nothing cached from before it.
	proxy := startServe(t, "--provider-template", template)
	after := tofuDecision(t, proxy.Host, "expiring", "")
	if after.decision != testenv.AcceptedWithWarning {
		t.Errorf("after the key expired, tofu through the proxy: %s (want installed with its expiry warning)\n%s", after.decision, after.out)
	}
	enforced := tofuDecision(t, proxy.Host, "expiring", "", enforceExpiration)
	if enforced.decision != testenv.Refused || !strings.Contains(enforced.out, "unknown issuer") {
		t.Errorf("after the key expired, with %s tofu itself must refuse (not the proxy): %s\n%s", enforceExpiration, enforced.decision, enforced.out)
	}
	// Pushing it again now is accepted with a warning, and refused when
	// expiry is enforced, as tofu decides.
	out = mustRun(t, "push", "provider", "--json", "--key", keyFile, dir, reg.Host+"/providers/later/hello")
	if !strings.Contains(out, "expired on") {
		t.Errorf("a push after expiry must warn:\n%s", out)
	}
	if out, err := run(t, "push", "provider", "--enforce-gpg-expiration", "--key", keyFile, dir, reg.Host+"/providers/enforced/hello"); err == nil || !strings.Contains(out, "expiry is enforced") {
		t.Errorf("a push after expiry with --enforce-gpg-expiration must be refused: %v\n%s", err, out)
	}
}

// signedRelease writes hello 1.0.0 for linux_amd64 with SHA256SUMS signed
// now by key, and the armored public key.
func signedRelease(t *testing.T, gpg *testenv.GnuPG, key string) (dir, keyFile string) {
	t.Helper()
	dir = t.TempDir()
	fixture := testenv.Testdata(t, "providers", "hello", "1.0.0")
	var sums strings.Builder
	for _, name := range []string{"terraform-provider-hello_1.0.0_linux_amd64.zip", "terraform-provider-hello_1.0.0_manifest.json"} {
		b, err := os.ReadFile(filepath.Join(fixture, name))
		if err != nil {
			t.Fatal(err)
		}
		copyFile(t, filepath.Join(fixture, name), filepath.Join(dir, name))
		s := sha256.Sum256(b)
		sums.WriteString(hex.EncodeToString(s[:]) + "  " + name + "\n")
	}
	sig, err := gpg.DetachSign(key, []byte(sums.String()), testenv.SignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := gpg.ExportPublic(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile = filepath.Join(t.TempDir(), "key.asc")
	for path, b := range map[string][]byte{
		filepath.Join(dir, "terraform-provider-hello_1.0.0_SHA256SUMS"):     []byte(sums.String()),
		filepath.Join(dir, "terraform-provider-hello_1.0.0_SHA256SUMS.sig"): sig,
		keyFile: pub,
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, keyFile
}
