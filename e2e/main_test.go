// Package e2e runs oci-tofu as users do: the built binary against a real
// CNCF Distribution registry over TLS, checked by the real OpenTofu CLI
// (and Terraform where installed).
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

var ociTofu string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "oci-tofu-e2e-")
	if err != nil {
		panic(err)
	}
	ociTofu = filepath.Join(dir, "oci-tofu")
	build := exec.Command("go", "build", "-o", ociTofu, "../cmd/oci-tofu")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building oci-tofu:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	testenv.RemoveSignatureCorpus()
	os.Exit(code)
}

// run runs oci-tofu with SSL_CERT_FILE trusting the test CA.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	env := append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+t.TempDir())
	return testenv.Run(t, "", env, ociTofu, args...)
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("oci-tofu %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func jsonField(t *testing.T, out, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	s, _ := m[field].(string)
	if s == "" {
		t.Fatalf("no %q in %s", field, out)
	}
	return s
}

func trimSpace(s string) string { return strings.TrimSpace(s) }

// testenvEnv is the environment third-party tools run with: this process's,
// with an empty docker configuration.
func testenvEnv(t *testing.T) []string {
	return append(os.Environ(), "DOCKER_CONFIG="+t.TempDir(), "HOME="+t.TempDir())
}
