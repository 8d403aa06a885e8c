package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CLI runs OpenTofu or Terraform in an isolated home: its own CLI config,
// no plugin cache, no docker credentials, trusting the test CA.
type CLI struct {
	Path string
	Home string
	Env  []string
}

// Tofu returns the OpenTofu CLI built by `make tools`, configured with the
// given CLI configuration (HCL).
func Tofu(t testing.TB, cliConfig string) *CLI {
	return newCLI(t, Tool(t, "tofu"), cliConfig)
}

// Terraform returns the installed Terraform CLI, skipping the test where
// Terraform is not installed (it is on CI).
func Terraform(t testing.TB, cliConfig string) *CLI {
	t.Helper()
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not installed here")
	}
	return newCLI(t, p, cliConfig)
}

func newCLI(t testing.TB, path, cliConfig string) *CLI {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "cli.tfrc")
	if err := os.WriteFile(cfg, []byte(cliConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	docker := filepath.Join(home, ".docker")
	os.MkdirAll(docker, 0o700)
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TF_CLI_CONFIG_FILE=" + cfg,
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
		// The registry client's own timeout (10 s by default) is the
		// CLI's, not the proxy's: a loaded machine may take longer to
		// answer (refusing a 200,000-entry module takes 7 s at load 17),
		// and the tests are of the proxy's answers, bounded by its own
		// deadlines.
		"TF_REGISTRY_CLIENT_TIMEOUT=120",
		"DOCKER_CONFIG=" + docker,
		"SSL_CERT_FILE=" + NewCA(t).CertFile,
	}
	return &CLI{Path: path, Home: home, Env: env}
}

// Run runs the CLI in dir and returns its output; the test fails when it
// exits non-zero.
func (c *CLI) Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return MustRun(t, dir, c.Env, c.Path, args...)
}

// Try runs the CLI and returns output and error without failing the test.
func (c *CLI) Try(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	return Run(t, dir, c.Env, c.Path, args...)
}

// WriteConfig writes a configuration file (main.tf) into a new directory.
func WriteConfig(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.TrimLeft(body, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
