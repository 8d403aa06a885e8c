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
	// No TOFU: the demo finds tofu on PATH, says so, and builds none.
	tofuDir := filepath.Dir(testenv.Tool(t, "tofu"))
	cmd.Env = append(os.Environ(), "OCI_TOFU_BIN="+ociTofu, "TOFU=", "TOFU_BIN=", "PATH="+tofuDir+":"+os.Getenv("PATH"),
		"DEMO_DIR="+filepath.Join(dir, "demo"), "XDG_CACHE_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"using tofu 1.12.6 from PATH (" + tofuDir + "/tofu)", "==> serve the layout over HTTPS",
		"tofu init accepted the generated lock file unchanged.", "Demo done", "Next, try the proxy yourself", `docs/guide-serving.md, "Trying it out"`} {
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
