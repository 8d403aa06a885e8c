package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// CI jobs and pods authenticate with the JWT they already have: a GitHub
// Actions-, a GitLab CI- and a Kubernetes-shaped token (the last with its
// issuer's keys from a file, never fetched) each name their client by
// claims, and real tofu and terraform install that client's provider
// with it; an expired token, one for another audience and one whose
// claims match no client are refused, saying why.
func TestServeWorkloadIdentities(t *testing.T) {
	reg := testenv.StartRegistry(t)
	for _, team := range []string{"gh", "gl", "k8s"} {
		pushHello(t, reg.Host+"/providers/"+team+"/hello", "1.0.0")
	}
	ci := testenv.StartIssuer(t)
	cluster := testenv.StartIssuer(t)
	port := testenv.FreePort(t)
	host := fmt.Sprintf("localhost:%d", port)
	audience := "https://" + host
	dir := t.TempDir()
	jwks, _ := json.Marshal(cluster.JWKS())
	if err := os.WriteFile(filepath.Join(dir, "cluster-jwks.json"), jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.hcl")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf(`
client "github-acme" {
  oidc {
    issuer   = %[1]q
    audience = %[2]q
    claims   = { repository_owner = "acme", ref = "refs/heads/main" }
  }
  providers = ["example.com/gh/*"]
}
client "gitlab-platform" {
  oidc {
    issuer   = %[1]q
    audience = %[2]q
    claims   = { namespace_path = "platform/*" }
  }
  providers = ["example.com/gl/*"]
}
client "cluster-ci" {
  oidc {
    issuer   = %[3]q
    audience = %[2]q
    jwks     = "cluster-jwks.json"
    claims   = { sub = "system:serviceaccount:ci:*" }
  }
  providers = ["example.com/k8s/*"]
}
`, ci.URL, audience, cluster.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeOn(t, port, nil, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", pol)
	tokens := map[string]string{
		"gh": ci.Token(t, audience, "repo:acme/app:ref:refs/heads/main", 5*time.Minute,
			map[string]any{"repository": "acme/app", "repository_owner": "acme", "ref": "refs/heads/main"}),
		"gl": ci.Token(t, audience, "project_path:platform/net:ref_type:branch:ref:main", 5*time.Minute,
			map[string]any{"namespace_path": "platform/infra", "project_path": "platform/infra/net"}),
		"k8s": cluster.Token(t, audience, "system:serviceaccount:ci:runner", 5*time.Minute,
			map[string]any{"kubernetes.io": map[string]any{"namespace": "ci", "serviceaccount": map[string]any{"name": "runner"}}}),
	}
	install := func(t *testing.T, c cliFactory, token, team string) (string, error) {
		cli := c(t, networkMirrorConfig(s)+fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, token))
		wd := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "test/hello", team+"/hello", 1)})
		return cli.Try(t, wd, "init", "-input=false", "-no-color")
	}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			for team, token := range tokens {
				if out, err := install(t, c.new, token, team); err != nil || !strings.Contains(out, "Installed example.com/"+team+"/hello v1.0.0") {
					t.Errorf("%s's token, its own provider: %v\n%s", team, err, out)
				}
			}
			if out, err := install(t, c.new, tokens["gh"], "gl"); err == nil {
				t.Errorf("github-acme installed gitlab-platform's provider:\n%s", out)
			}
		})
	}
	if n := cluster.KeyFetches.Load(); n != 0 {
		t.Errorf("the cluster's keys were fetched %d times; they come from the file", n)
	}
	if n := ci.KeyFetches.Load(); n != 1 {
		t.Errorf("the CI issuer's keys were fetched %d times, want once (verified tokens are cached, keys too)", n)
	}
	for _, c := range []struct{ token, want string }{
		{ci.Token(t, audience, "repo:acme/app:ref:refs/heads/main", -2*time.Minute, map[string]any{"repository_owner": "acme", "ref": "refs/heads/main"}), "expired"},
		{ci.Token(t, "https://elsewhere.example", "repo:acme/app:ref:refs/heads/main", 5*time.Minute, map[string]any{"repository_owner": "acme", "ref": "refs/heads/main"}), "audience"},
		{ci.Token(t, audience, "repo:other/app:ref:refs/heads/main", 5*time.Minute, map[string]any{"repository_owner": "other"}), "no client's oidc block for that issuer matches its claims"},
	} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/mirror/example.com/gh/hello/index.json", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), c.want) {
			t.Errorf("refused token: %d %s, want 401 saying %q", resp.StatusCode, body, c.want)
		}
		if strings.Contains(s.logs.String(), c.token) || strings.Contains(string(body), c.token) {
			t.Error("a JWT in the log or the answer")
		}
	}
}

// With --registry-decides, a Distribution registry with token auth whose
// token server grants alice team-a's repositories and bob team-b's
// decides what each reads through one proxy: after alice warmed every
// cache with team-a's documents and archives, bob gets none of them, by
// any protocol or URL, and installs team-b's with real tofu; the proxy
// reads with its own credential.
func TestServeRegistryDecides(t *testing.T) {
	reg := testenv.StartTokenRegistry(t, "proxy", "proxy-Pa55")
	reg.Token.AddUser("alice", "alice-Pa55", "providers/team-a/")
	reg.Token.AddUser("bob", "bob-Pa55", "providers/team-b/")
	for _, team := range []string{"team-a", "team-b"} {
		if out, err := pushProvider(t, reg.Credential(), reg.Host+"/providers/"+team+"/hello", "1.0.0"); err != nil {
			t.Fatalf("push: %v\n%s", err, out)
		}
	}
	s := startServeEnv(t, credentialEnv(t, reg.Credential()), "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--registry-decides",
		"--registry-confirm-ttl", "2s")
	alice, bob := "alice:alice-Pa55", "bob:bob-Pa55"
	get := func(path, token string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	docs := []string{"/v1/mirror/example.com/team-a/hello/index.json", "/v1/mirror/example.com/team-a/hello/1.0.0.json",
		"/v1/providers/team-a/hello/versions", "/v1/providers/team-a/hello/1.0.0/download/linux/amd64"}
	var archive string
	for _, path := range docs {
		code, body := get(path, alice)
		if code != 200 {
			t.Fatalf("alice %s: %d %s", path, code, body)
		}
		if strings.HasSuffix(path, "1.0.0.json") {
			var mv struct {
				Archives map[string]struct{ URL string } `json:"archives"`
			}
			json.Unmarshal(body, &mv)
			archive = strings.SplitN(mv.Archives["linux_amd64"].URL, "?", 2)[0]
		}
	}
	archivePath := "/v1/mirror/example.com/team-a/hello/" + archive
	if u, err := url.Parse(archive); err == nil && u.IsAbs() {
		archivePath = u.Path
	}
	if code, _ := get(archivePath, alice); code != 200 {
		t.Errorf("alice's token on team-a's archive: %d", code)
	}
	for _, path := range append(docs, archivePath) {
		if code, body := get(path, bob); code != http.StatusNotFound || !strings.Contains(string(body), "the registry does not let user bob read it") {
			t.Errorf("bob %s after alice warmed the caches: %d %s", path, code, body)
		}
	}
	if code, body := get(docs[0], "bob:wrong-password"); code != http.StatusNotFound {
		t.Errorf("a wrong registry password: %d %s", code, body)
	}
	if code, body := get(docs[0], "no-colon"); code != http.StatusUnauthorized || !strings.Contains(string(body), "USERNAME:PASSWORD") {
		t.Errorf("a token that is no registry credential: %d %s", code, body)
	}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, networkMirrorConfig(s)+fmt.Sprintf("credentials %q {\n  token = %q\n}\n", s.Host, bob))
			for team, want := range map[string]bool{"team-b": true, "team-a": false} {
				dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "test/hello", team+"/hello", 1)})
				out, err := cli.Try(t, dir, "init", "-input=false", "-no-color")
				if got := err == nil && strings.Contains(out, "Installed example.com/"+team+"/hello v1.0.0"); got != want {
					t.Errorf("bob installs %s: %v, want %v:\n%s", team, got, want, out)
				}
			}
		})
	}
	// The registry revokes bob's credential: within the confirmation's
	// time he reads nothing more.
	path := "/v1/mirror/example.com/team-b/hello/index.json"
	if code, _ := get(path, bob); code != 200 {
		t.Fatalf("bob's own provider: %d", code)
	}
	reg.Token.AddUser("bob", "rotated-Pa55", "providers/team-b/")
	time.Sleep(2500 * time.Millisecond)
	if code, body := get(path, bob); code != http.StatusNotFound {
		t.Errorf("bob's revoked credential after the confirmation expired: %d %s", code, body)
	}
	if strings.Contains(s.logs.String(), "alice-Pa55") || strings.Contains(s.logs.String(), "bob-Pa55") {
		t.Error("a registry password in the proxy's log")
	}
}
