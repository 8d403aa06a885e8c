package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// `make demo`'s script, run as make runs it into a log: it succeeds with
// the built binary and the real tofu, and its log is plain text (no
// terminal escapes when the output is not a terminal).
func TestDemoScript(t *testing.T) {
	root := testenv.Root(t)
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "OCI_TOFU_BIN="+ociTofu, "TOFU_BIN="+testenv.Tool(t, "tofu"), "DEMO_DIR="+filepath.Join(dir, "demo"), "XDG_CACHE_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"==> serve the layout over HTTPS", "tofu init accepted the generated lock file unchanged.", "Demo done"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsRune(string(out), 0x1b) {
		t.Errorf("the demo's log holds terminal escapes:\n%q", out)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "demo", "serve.log")); err != nil || strings.ContainsRune(string(log), 0x1b) {
		t.Errorf("serve.log: %v %q", err, log)
	}
}
