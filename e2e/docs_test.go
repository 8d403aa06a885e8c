package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// docBlock is the first ```sh block after heading in a file of docs/.
func docBlock(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "docs", file))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), heading+"\n")
	if !ok {
		t.Fatalf("docs/%s has no %q", file, heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, closed := strings.Cut(rest, "```\n")
	if !ok || !closed {
		t.Fatalf("docs/%s: no sh block after %q", file, heading)
	}
	return block
}

// docs/guide-serving.md's "Trying it out", run as written (in a temporary
// directory and on a free port), ends in a provider installed by real
// tofu through the proxy.
func TestProxyDocTryingItOut(t *testing.T) {
	block := docBlock(t, "guide-serving.md", "### Trying it out")
	dir := t.TempDir()
	port := fmt.Sprint(testenv.FreePort(t))
	script := strings.NewReplacer("/tmp/oci-tofu-try", dir, "8443", port).Replace(block)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = testenv.Root(t)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(ociTofu)+":"+filepath.Dir(testenv.Tool(t, "tofu"))+":"+os.Getenv("PATH"),
		"HOME="+dir, "DOCKER_CONFIG="+dir, "TF_PLUGIN_CACHE_DIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the server it starts is stopped with it
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		}
	})
	// A file, not a pipe: the server left running in the background
	// keeps its copy of the descriptor open.
	log, err := os.Create(filepath.Join(dir, "commands.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the doc's commands did not finish")
	}
	out, _ := os.ReadFile(log.Name())
	if err != nil || !strings.Contains(string(out), "OpenTofu has been successfully initialized") {
		t.Fatalf("the doc's commands: %v\n%s", err, out)
	}
	lock, rerr := os.ReadFile(filepath.Join(dir, "config", ".terraform.lock.hcl"))
	if rerr != nil || !strings.Contains(string(lock), `provider "example.com/test/hello"`) {
		t.Errorf("no lock entry for the provider: %v\n%s", rerr, lock)
	}
}
