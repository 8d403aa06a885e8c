package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// factsPolicyFile writes a policy (src) to a directory of its own, with
// the public key files keys maps (name beside the policy → file), so the
// policy names them by relative paths; it returns the policy's path.
func factsPolicyFile(t *testing.T, src string, keys map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, from := range keys {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "policy.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// pushResigned pushes a hello fixture version re-signed at push time
// with another publisher key (other-private.asc): the release without its
// SHA256SUMS and signature, pushed with --sign-key.
func pushResigned(t *testing.T, repo, version string) {
	t.Helper()
	dir := t.TempDir()
	from := testenv.Testdata(t, "providers", "hello", version)
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "SHA256SUMS") {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(from, e.Name()))
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	mustRun(t, "push", "provider", "--quiet", "--sign-key", testenv.Testdata(t, "keys", "other-private.asc"), dir, repo)
}

// keyIDOf is the ID of the primary key in an armored public key file.
func keyIDOf(t *testing.T, file string) string {
	t.Helper()
	kr, err := pgp.LoadKeyring(file)
	if err != nil {
		t.Fatal(err)
	}
	return pgp.KeyID(kr.Entities[0].PrimaryKey.KeyId)
}

// Required signers, with real tofu and terraform: of the versions ">= 1.0"
// admits, each installs the newest one signed as the policy requires — by
// the publisher key it names (1.1.0 is signed by another), by the
// organisation's attestation key (push --attest-key) or by a cosign key
// (signed with the real cosign CLI) — and the others do not exist for them.
func TestPolicySigners(t *testing.T) {
	reg := testenv.StartRegistry(t)
	publisher := keyIDOf(t, testenv.Testdata(t, "keys", "gpg-signer.asc"))

	t.Run("publisher", func(t *testing.T) {
		repo := reg.Host + "/publisher/test/hello"
		pushHello(t, repo, "1.0.0")
		pushResigned(t, repo, "1.1.0")
		file := factsPolicyFile(t, `provider "*/*/*" { signers = ["publisher:`+publisher+`"] }`, nil)
		s := startServe(t, "--provider-template", reg.Host+"/publisher/${namespace}/${type}", "--policy", file)
		code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
		if code != 404 || !strings.Contains(string(body), "example.com/test/hello 1.1.0 is not signed by publisher:"+publisher) {
			t.Errorf("1.1.0.json: %d %s", code, body)
		}
		installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello 1.1.0 is not signed by publisher:"+publisher)
	})

	t.Run("attestation", func(t *testing.T) {
		key, pub := ecdsaKeyPair(t)
		repo := reg.Host + "/attested/test/hello"
		pushAttested(t, key, repo, "1.0.0")
		pushHello(t, repo, "1.1.0")
		file := factsPolicyFile(t, `provider "*/*/*" { signers = ["attestation:keys/org.pub"] }`, map[string]string{"keys/org.pub": pub})
		s := startServe(t, "--provider-template", reg.Host+"/attested/${namespace}/${type}", "--policy", file)
		installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello 1.1.0 is not signed by attestation:keys/org.pub")
	})

	t.Run("cosign", func(t *testing.T) {
		dir := t.TempDir()
		if out, err := cosign(t, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "cosign")); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
		repo := reg.Host + "/cosigned/test/hello"
		d := jsonField(t, mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", "1.0.0"), repo), "digest")
		pushHello(t, repo, "1.1.0")
		if out, err := cosign(t, "sign", "--key", filepath.Join(dir, "cosign.key"), "--tlog-upload=false", "--use-signing-config=false",
			"--new-bundle-format=false", "--yes", repo+"@"+d); err != nil {
			t.Fatalf("cosign sign: %v\n%s", err, out)
		}
		file := factsPolicyFile(t, `provider "*/*/*" { signers = ["cosign:cosign.pub"] }`, map[string]string{"cosign.pub": filepath.Join(dir, "cosign.pub")})
		s := startServe(t, "--provider-template", reg.Host+"/cosigned/${namespace}/${type}", "--policy", file)
		installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello 1.1.0 is not signed by cosign:cosign.pub")
	})

	t.Run("policy test", func(t *testing.T) {
		_, pub := ecdsaKeyPair(t)
		file := factsPolicyFile(t, `provider "*/*/*" {
  versions = ">= 1.0"
  min_age  = "72h"
  signers  = ["attestation:org.pub"]
}`, map[string]string{"org.pub": pub})
		out := mustRun(t, "policy", "test", "--policy", file, "example.com/test/hello@1.0.0", "example.com/test/hello@0.9.0")
		if !strings.Contains(out, `depends  provider example.com/test/hello@1.0.0  rule "*/*/*": example.com/test/hello 1.0.0 meets the versions of the policy's rule "*/*/*", but the decision depends on what the registry holds of it: min_age and signers`) ||
			!strings.Contains(out, "deny   provider example.com/test/hello@0.9.0") {
			t.Errorf("policy test:\n%s", out)
		}
		bad := factsPolicyFile(t, "module \"a/b/c\" {\n  signers = [\"attestation:missing.pub\"]\n}\n", nil)
		if out, err := run(t, "policy", "test", "--policy", bad, "tofu"); err == nil || !strings.Contains(out, bad+`:2:13: signers: "attestation:missing.pub": reading the public key`) {
			t.Errorf("a missing key: %v\n%s", err, out)
		}
	})
}

// min_age with a real clock: a release younger than the cool-down is left
// out (tofu installs the older one), and installed once it is old
// enough, by the same serve, without a restart. The ingest time is the
// one push --attest-key records, trusted through --require-attestation.
func TestPolicyMinAge(t *testing.T) {
	const minAge = 8 * time.Second
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	file := factsPolicyFile(t, fmt.Sprintf(`provider "*/*/*" {
  name    = "cool-down"
  min_age = "%s"
}`, minAge), nil)
	pushAttested(t, key, repo, "1.0.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", file, "--require-attestation", pub)
	waitServed(t, s, "/v1/mirror/example.com/test/hello/1.0.0.json", 4*minAge)

	pushAttested(t, key, repo, "1.1.0")
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
	if code != 404 || !strings.Contains(string(body), `is younger than min_age = \"8s\" of the policy's rule \"cool-down\"`) {
		t.Fatalf("1.1.0.json right after its push: %d %s", code, body)
	}
	cli := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, ">= 1.0")})
	if out := cli.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
		t.Fatalf("while 1.1.0 is too young, 1.0.0 not installed:\n%s", out)
	}

	waitServed(t, s, "/v1/mirror/example.com/test/hello/1.1.0.json", 4*minAge)
	installsOnly(t, s, ">= 1.0", "1.1.0", "")
}

// waitServed waits (at most limit) until path answers 200.
func waitServed(t *testing.T, s *served, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		code, body := s.get(t, path)
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %d after %s: %s", path, code, limit, body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
