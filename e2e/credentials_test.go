package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Registry credentials: refused without, accepted from --password-stdin,
// from the environment and from the docker config; the password never
// appears in output. Real tofu installs with the same docker config.
func TestPushWithCredentials(t *testing.T) {
	const user, pass = "ci-bot", "s3cret-Pa55word"
	reg := testenv.StartRegistryWithAuth(t, user, pass)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	rel := testenv.Testdata(t, "providers", "hello", "1.0.0")
	base := append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "OCI_TOFU_USERNAME=", "OCI_TOFU_PASSWORD=")
	push := func(env []string, stdin string, extra ...string) (string, error) {
		args := append([]string{"push", "provider", "--key", key}, extra...)
		args = append(args, rel, reg.Host+"/providers/test/hello")
		cmd := exec.Command(ociTofu, args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), pass) {
			t.Errorf("the password appears in the output:\n%s", out)
		}
		return string(out), err
	}
	emptyDocker := "DOCKER_CONFIG=" + t.TempDir()

	out, err := push(append(base, emptyDocker), "")
	if err == nil || !strings.Contains(out, "hint: the registry wants credentials") {
		t.Fatalf("push without credentials: %v\n%s", err, out)
	}
	assertNoTagsWithAuth(t, reg, user, pass)

	if out, err := push(append(base, emptyDocker), pass+"\n", "--username", user, "--password-stdin"); err != nil {
		t.Fatalf("--password-stdin: %v\n%s", err, out)
	}
	if out, err := push(append(base, emptyDocker, "OCI_TOFU_USERNAME="+user, "OCI_TOFU_PASSWORD="+pass), ""); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("environment credentials: %v\n%s", err, out)
	}
	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	os.WriteFile(filepath.Join(docker, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, auth)), 0o600)
	if out, err := push(append(base, "DOCKER_CONFIG="+docker), ""); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("docker config credentials: %v\n%s", err, out)
	}
	if out, err := push(append(base, emptyDocker), "wrong\n", "--username", user, "--password-stdin"); err == nil {
		t.Fatalf("wrong password accepted:\n%s", out)
	}

	// tofu reads the same docker config file, from its home directory.
	tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
	cfg, _ := os.ReadFile(filepath.Join(docker, "config.json"))
	os.WriteFile(filepath.Join(tofu.Home, ".docker", "config.json"), cfg, 0o600)
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.0.0")})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
}

func assertNoTagsWithAuth(t *testing.T, reg *testenv.Registry, user, pass string) {
	t.Helper()
	cmd := exec.Command(testenv.Tool(t, "crane"), "ls", reg.Host+"/providers/test/hello")
	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	os.WriteFile(filepath.Join(docker, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, auth)), 0o600)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "DOCKER_CONFIG="+docker)
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "1.0.0") {
		t.Fatalf("a refused push left tags: %s", out)
	}
}

// Where tofu 1.12 finds credentials for oci:// module sources (and
// oci_mirror): the containers auth.json under $HOME/.config and
// $HOME/.docker/config.json, but not $DOCKER_CONFIG, which only the docker
// CLI (and oci-tofu) read. docs/guide-modules.md says so; this pins it.
func TestTofuOCICredentialLocations(t *testing.T) {
	isolateCache(t)
	const user, pass = "ci-bot", "s3cret-Pa55word"
	reg := testenv.StartRegistryWithAuth(t, user, pass)
	repo := reg.Host + "/modules/greeting"
	env := append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "DOCKER_CONFIG="+t.TempDir(), "OCI_TOFU_USERNAME="+user, "OCI_TOFU_PASSWORD="+pass)
	testenv.MustRun(t, "", env, ociTofu, "push", "module", "--quiet", testenv.Testdata(t, "modules", "greeting"), repo+":1.0.0")

	auths := []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, base64.StdEncoding.EncodeToString([]byte(user+":"+pass))))
	config := fmt.Sprintf("module \"m\" {\n  source = \"oci://%s?tag=1.0.0\"\n  name   = \"x\"\n}\n", repo)
	try := func(place func(tofu *testenv.CLI)) (string, error) {
		tofu := testenv.Tofu(t, "")
		place(tofu)
		return tofu.Try(t, testenv.WriteConfig(t, map[string]string{"main.tf": config}), "init", "-input=false", "-no-color")
	}
	write := func(path string) {
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, auths, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := try(func(tofu *testenv.CLI) {
		dir := t.TempDir()
		write(filepath.Join(dir, "config.json"))
		tofu.Env = append(tofu.Env, "DOCKER_CONFIG="+dir)
	}); err == nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "credential not found") {
		t.Errorf("with credentials only in DOCKER_CONFIG (docs/guide-modules.md: tofu does not read it): %v\n%s", err, out)
	}
	if out, err := try(func(tofu *testenv.CLI) { write(filepath.Join(tofu.Home, ".config", "containers", "auth.json")) }); err != nil {
		t.Errorf("$HOME/.config/containers/auth.json: %v\n%s", err, out)
	}
	if out, err := try(func(tofu *testenv.CLI) { write(filepath.Join(tofu.Home, ".docker", "config.json")) }); err != nil {
		t.Errorf("$HOME/.docker/config.json: %v\n%s", err, out)
	}
}
