package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// cosignModes are the two ways the real cosign v3 stores what it signs:
// by default a Sigstore bundle as an OCI 1.1 referrer (on Distribution,
// which has no referrers API, listed under the referrers tag schema's
// sha256-<hex> tag); with the old format, cosign's own .sig/.att tags.
// No transparency log: a signing config without one, or none at all.
func cosignModes(t *testing.T) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	sc := filepath.Join(dir, "signing-config.json")
	if out, err := cosign(t, "signing-config", "create", "--out", sc); err != nil {
		t.Fatalf("cosign signing-config create: %v\n%s", err, out)
	}
	return map[string][]string{
		"bundle":     {"--signing-config", sc},
		"tag-schema": {"--use-signing-config=false", "--tlog-upload=false", "--new-bundle-format=false"},
	}
}

// cosignKeyPair makes a key pair with the real cosign (encrypted with
// COSIGN_PASSWORD, which the cosign helper sets).
func cosignKeyPair(t *testing.T) (key, pub string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "cosign")
	if out, err := cosign(t, "generate-key-pair", "--output-key-prefix", prefix); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	return prefix + ".key", prefix + ".pub"
}

// cosignSignAndAttest signs ref with the real cosign and attests it with
// the provider predicate type, in a mode.
func cosignSignAndAttest(t *testing.T, mode []string, key, ref string) {
	t.Helper()
	pred := filepath.Join(t.TempDir(), "predicate.json")
	os.WriteFile(pred, []byte(`{"attested_by":"cosign"}`), 0o644)
	if out, err := cosign(t, append(append([]string{"sign", "--key", key}, mode...), ref)...); err != nil {
		t.Fatalf("cosign sign: %v\n%s", err, out)
	}
	args := append(append([]string{"attest", "--key", key}, mode...), "--type", release.ProviderPredicateType, "--predicate", pred, ref)
	if out, err := cosign(t, args...); err != nil {
		t.Fatalf("cosign attest: %v\n%s", err, out)
	}
}

// oci-tofu verifies what the real cosign CLI signs and attests, in its
// default mode (bundles as referrers) and its tag-schema mode: verify
// --attest-pub passes with cosign's key and refuses another;
// serve --require-attestation serves both releases to real tofu and
// leaves an unsigned one out.
func TestCosignSignedReleasesAreVerified(t *testing.T) {
	reg := testenv.StartRegistry(t)
	t.Setenv("COSIGN_PASSWORD", "test-password") // for oci-tofu reading cosign.key
	key, pub := cosignKeyPair(t)
	_, otherPub := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.0.0", "1.1.0", "2.0.0-rc1")
	// The newest one tofu installs is the bundle-signed one.
	versions := map[string]string{"bundle": "1.1.0", "tag-schema": "1.0.0"}
	for mode, args := range cosignModes(t) {
		t.Run(mode, func(t *testing.T) {
			ref := repo + ":" + versions[mode]
			desc, err := registryRepo(t, reg, "providers/test/hello").Resolve(context.Background(), versions[mode])
			if err != nil {
				t.Fatal(err)
			}
			d := desc.Digest.String()
			cosignSignAndAttest(t, args, key, repo+"@"+d)
			if out, err := cosignVerify(t, pub, repo+"@"+d); err != nil {
				t.Fatalf("cosign verify of its own signature: %v\n%s", err, out)
			}
			out := mustRun(t, "verify", "--skip-zips", "--attest-pub", pub, ref)
			wantLine(t, out, "ok", d+" is signed and attested ("+release.ProviderPredicateType+") by key "+pub)
			out = verifyRefused(t, "another key", otherPub, ref)
			wantLine(t, out, "error", "key "+otherPub+": ")
		})
	}
	out := mustRun(t, "verify", "--skip-zips", repo)
	if strings.Contains(out, "sha256-") && strings.Contains(out, "not a version") {
		t.Errorf("verify lists the referrers tag as a version:\n%s", out)
	}

	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--require-attestation", pub)
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || !strings.Contains(string(body), `"1.0.0"`) || !strings.Contains(string(body), `"1.1.0"`) || strings.Contains(string(body), "2.0.0-rc1") {
		t.Errorf("index.json with cosign's key: %d %s", code, body)
	}
	installsOnly(t, s, "~> 1.0", "1.1.0", "")
}
