package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Real tofu and terraform, each with a token of the policy file's client
// team-a (a credentials block), install team-a's provider through the
// network mirror and the registry protocol, and cannot see team-b's,
// neither when installing nor by direct URL; policy token makes what the
// file holds, and policy test --as explains both decisions.
func TestServeScopedClients(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/team-a/hello", "1.0.0")
	pushHello(t, reg.Host+"/providers/team-b/hello", "1.0.0")
	tokenA := strings.Fields(mustRun(t, "policy", "token"))[1]
	hash := exec.Command(ociTofu, "policy", "token", "--stdin")
	hash.Stdin = strings.NewReader(tokenA + "\n")
	out, err := hash.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "hash   sha256:") {
		t.Fatalf("policy token --stdin: %v\n%s", err, out)
	}
	hashA := strings.Fields(string(out))[1]
	port := testenv.FreePort(t)
	host := fmt.Sprintf("localhost:%d", port)
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf(`
client "team-a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*", "localhost/team-a/*"]
}
client "team-b" {
  tokens    = [%q]
  providers = ["example.com/team-b/*", "localhost/team-b/*"]
}
`, hashA, strings.Fields(mustRun(t, "policy", "token"))[3])), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeOn(t, port, nil, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", pol)

	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			creds := fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, tokenA)
			mirror := c.new(t, networkMirrorConfig(s)+creds)
			for _, team := range []string{"team-a", "team-b"} {
				dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "test/hello", team+"/hello", 1)})
				out, err := mirror.Try(t, dir, "init", "-input=false", "-no-color")
				if team == "team-a" && (err != nil || !strings.Contains(out, "Installed example.com/team-a/hello v1.0.0")) {
					t.Fatalf("network mirror, team-a's provider: %v\n%s", err, out)
				}
				if team == "team-b" && err == nil {
					t.Fatalf("network mirror: team-a installed team-b's provider:\n%s", out)
				}
			}
			origin := c.new(t, creds)
			for _, team := range []string{"team-a", "team-b"} {
				addr := host + "/" + team + "/hello"
				dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", addr, 1)})
				out, err := origin.Try(t, dir, "init", "-input=false", "-no-color")
				if team == "team-a" && (err != nil || !strings.Contains(out, "Installed "+addr+" v1.0.0")) {
					t.Fatalf("registry protocol, team-a's provider: %v\n%s", err, out)
				}
				if team == "team-b" && err == nil {
					t.Fatalf("registry protocol: team-a installed team-b's provider:\n%s", out)
				}
			}
		})
	}
	// By direct URL, team-b's documents answer team-a as absent ones do.
	for _, path := range []string{"/v1/mirror/example.com/team-b/hello/index.json", "/v1/mirror/example.com/team-b/hello/1.0.0.json",
		"/v1/providers/team-b/hello/versions", "/v1/providers/team-b/hello/1.0.0/download/linux/amd64"} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tokenA)
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("team-a GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	if strings.Contains(s.logs.String(), tokenA) {
		t.Error("team-a's token is in the proxy's log")
	}
	explained := mustRun(t, "policy", "test", "--policy", pol, "--as", "team-a", "example.com/team-a/hello", "example.com/team-b/hello")
	if !strings.Contains(explained, "allow  provider example.com/team-a/hello  client team-a may read it (pattern example.com/team-a/*)") ||
		!strings.Contains(explained, "deny   provider example.com/team-b/hello  client team-a may not read example.com/team-b/hello") {
		t.Errorf("policy test --as:\n%s", explained)
	}
}
