package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The real CNCF Distribution notifies `oci-tofu serve --tag-ttl 1h` of
// pushes (notifications.endpoints, over TLS with the proxy's CA): a
// version `oras cp` pushes into the registry, bypassing oci-tofu, is
// listed within 2 s of oras returning, and `tofu init -upgrade` through
// the proxy installs it.
func TestDistributionNotifiesServe(t *testing.T) {
	const secret = "e2e-notifications-secret-0123456789"
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testenv.FreePort(t)
	ca := testenv.NewCA(t)
	reg := testenv.StartRegistryNotifying(t, func(*testenv.Registry) testenv.Notifying {
		return testenv.Notifying{URL: fmt.Sprintf("https://localhost:%d/notifications/registry", port), Authorization: "Bearer " + secret, CAFile: ca.CertFile}
	})
	s := startServeOn(t, port, []string{"OCI_TOFU_NOTIFICATIONS_SECRET_FILE=" + secretFile},
		"--provider-template", reg.Host+"/providers/${namespace}/${type}", "--tag-ttl", "1h", "--resolve-ttl", "1h")
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")

	tofu := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, ">= 1.0.0")})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	lockEntry(t, dir, "example.com/test/hello", "1.0.0")

	// 1.1.0 staged in a layout, then pushed into the registry by oras.
	layout := filepath.Join(t.TempDir(), "hello")
	pushHello(t, "oci-layout:"+layout, "1.1.0")
	mustOras(t, "cp", "--no-tty", "-r", "--from-oci-layout", "--to-plain-http=false", "--to-ca-file", ca.CertFile,
		layout+":1.1.0", reg.Host+"/providers/test/hello:1.1.0")
	pushed := time.Now()
	for {
		code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
		var idx struct{ Versions map[string]any }
		if code == 200 && json.Unmarshal(body, &idx) == nil && idx.Versions["1.1.0"] != nil {
			break
		}
		if time.Since(pushed) > 2*time.Second {
			t.Fatalf("2 s after oras pushed 1.1.0 the proxy lists: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := tofu.Run(t, dir, "init", "-upgrade", "-input=false", "-no-color")
	lockEntry(t, dir, "example.com/test/hello", "1.1.0")
	if !strings.Contains(out, "1.1.0") {
		t.Errorf("tofu init -upgrade did not install 1.1.0:\n%s", out)
	}
}
