package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// serve --require-attestation: of two versions a constraint admits, real
// tofu (network mirror and registry protocol) and terraform (registry
// protocol) install the one attested with push provider --attest-key;
// the other does not exist for them.
func TestRequireAttestation(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	pushAttested(t, key, repo, "1.0.0")
	pushHello(t, repo, "1.1.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--require-attestation", pub)

	code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
	if code != 404 || !strings.Contains(string(body), "no attestation verifying with the configured keys") {
		t.Errorf("1.1.0.json: %d %s", code, body)
	}
	code, body = s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || strings.Contains(string(body), "1.1.0") || !strings.Contains(string(body), "1.0.0") {
		t.Errorf("index.json: %d %s", code, body)
	}

	installsOnly(t, s, "~> 1.0", "1.0.0", "1.1.0 is left out: no attestation verifying with the configured keys")
}

// serve refuses to start with a file that is no public key, beside
// pull-through that does not attest with one of the required keys, and
// with --attest-key but no pull-through.
func TestRequireAttestationStartUp(t *testing.T) {
	_, pub := ecdsaKeyPair(t)
	otherKey, _ := ecdsaKeyPair(t)
	notKey := filepath.Join(t.TempDir(), "not.pub")
	os.WriteFile(notKey, []byte("not a key\n"), 0o644)
	base := []string{"serve", "--check", "--provider-template", "oci-layout:" + t.TempDir() + "/${namespace}/${type}"}
	for what, c := range map[string]struct {
		args []string
		want string
	}{
		"not a key":    {[]string{"--require-attestation", notKey}, "--require-attestation: " + notKey},
		"missing":      {[]string{"--require-attestation", notKey + ".gone"}, "--require-attestation"},
		"pull-through": {[]string{"--require-attestation", pub, "--pull-through-origin", "registry.opentofu.org"}, "needs --attest-key"},
		"other key":    {[]string{"--require-attestation", pub, "--attest-key", otherKey, "--pull-through-origin", "registry.opentofu.org"}, "--attest-key's public key is not among --require-attestation's keys"},
		"no pull":      {[]string{"--attest-key", otherKey}, "--attest-key signs and attests the releases pull-through stores"},
	} {
		out, err := run(t, append(base, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: %v, want a refusal saying %q:\n%s", what, err, c.want, out)
		}
	}
}

// installsOnly requires real tofu through the network mirror, and tofu and
// terraform through the registry protocol, to install version of the hello
// provider under constraint, the proxy leaving a newer one out; tofu must
// print why (why, compared with whitespace collapsed: tofu wraps warnings).
func installsOnly(t *testing.T, s *served, constraint, version, why string) {
	t.Helper()
	t.Run("tofu network mirror", func(t *testing.T) {
		cli := testenv.Tofu(t, networkMirrorConfig(s))
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, constraint)})
		out := cli.Run(t, dir, "init", "-input=false", "-no-color")
		if !strings.Contains(out, "Installed example.com/test/hello v"+version) {
			t.Fatalf("%s not installed:\n%s", version, out)
		}
	})
	addr := s.Host + "/test/hello"
	for _, c := range clis {
		t.Run(c.name+" registry protocol", func(t *testing.T) {
			cli := c.new(t, "")
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, constraint), "example.com/test/hello", addr, 1)})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "Installed "+addr+" v"+version) {
				t.Fatalf("%s not installed:\n%s", version, out)
			}
			if c.name == "tofu" && !strings.Contains(strings.Join(strings.Fields(out), " "), why) {
				t.Errorf("tofu did not print why the newer version is left out:\n%s", out)
			}
		})
	}
}
