package testenv

import (
	"fmt"
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// StartPlainHTTPRegistry starts go-containerregistry's registry speaking
// plain HTTP (no TLS front) on 127.0.0.1 and returns its host
// ("127.0.0.1:PORT"); it stops when the test ends. Clients reach it only
// with --plain-http: it is what a local test registry looks like.
func StartPlainHTTPRegistry(t testing.TB) string {
	t.Helper()
	port := FreePort(t)
	host := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(Tool(t, "crane"), "registry", "serve", "--address", host, "--disk", t.TempDir())
	log, done := startLogged(t, cmd)
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if resp, err := client.Get("http://" + host + "/v2/"); err == nil {
			resp.Body.Close()
			return host
		}
		select {
		case <-done:
			t.Fatalf("crane registry exited: %s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("crane registry did not start: %s", log.String())
	return ""
}
