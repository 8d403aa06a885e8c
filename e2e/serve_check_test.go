package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Everything serve is given is checked before it listens: a template that
// names no repository (a URL, as push refuses it too), patterns tofu
// refuses, files that do not load.
func TestServeRefusesBadConfigurationAtStart(t *testing.T) {
	ca := testenv.NewCA(t)
	tlsFlags := []string{"--listen", "127.0.0.1:0", "--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider-template", "https://localhost:5000/p/${namespace}/${type}"}, "without a scheme"},
		{[]string{"--provider-template", "localhost:5000/p/${namespace}/${type}:latest"}, "must not name a tag"},
		{[]string{"--module-template", "https://localhost:5000/m/${namespace}/${name}/${system}"}, "without a scheme"},
		{[]string{"--provider-template", "localhost:5000/p/${namespace}/${type}", "--include", "*/acme/*"}, "hostname can be a wildcard only if"},
		{[]string{"--provider-template", "localhost:5000/p/${namespace}/${type}", "--exclude", "example.com/hashi*/aws"}, "--exclude"},
		{[]string{"--provider-template", "localhost:5000/p/${namespace}/${type}", "--signing-key", "/nonexistent.asc"}, "nonexistent.asc"},
		{[]string{"--tofu-repository", "localhost:5000/tofu:1.9.0"}, "without a tag or digest"},
		{[]string{"--provider-template", "localhost:5000/p/${namespace}/${type}", "--json"}, "--json goes with --check"},
	} {
		out, err := run(t, append(append([]string{"serve"}, tlsFlags...), tc.args...)...)
		if exitCode(t, err) != 1 || !strings.Contains(out, tc.want) || strings.Contains(out, "msg=serving") {
			t.Errorf("%v: want exit 1 with %q before serving:\n%s", tc.args, tc.want, out)
		}
	}
	// push refuses the same URL-shaped repository.
	out, err := run(t, "push", "provider", "--unsigned", testenv.Testdata(t, "providers", "hello", "1.0.0"), "https://localhost:5000/p/test/hello")
	if exitCode(t, err) != 1 || !strings.Contains(out, "without a scheme") {
		t.Errorf("push with a URL: %v\n%s", err, out)
	}
}

// `serve --check` resolves each mapping against its registry: credentials,
// TLS and a sample repository, as a table or JSON; exit status 1 when a
// check failed, with the hint that says what to do.
func TestServeCheck(t *testing.T) {
	reg := testenv.StartRegistryWithAuth(t, "check-user", "check-Pa55")
	docker := testenv.WriteDockerConfig(t, t.TempDir(), reg.Credential())
	pushWith := []string{"DOCKER_CONFIG=" + docker}
	out, err := runWith(t, pushWith, "", "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/test/hello")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	ca := testenv.NewCA(t)
	args := []string{"serve", "--check", "--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile,
		"--provider-template", reg.Host + "/providers/${namespace}/${type}",
		"--tofu-repository", reg.Host + "/tofu/releases",
		"--check-provider", "example.com/test/hello"}

	// Without credentials: the registry wants them, and says so.
	out, err = runWith(t, nil, "", args...)
	if exitCode(t, err) != 1 || !strings.Contains(out, "error    providers --provider-template") ||
		!strings.Contains(out, "hint (providers --provider-template): the registry wants credentials: run `docker login "+reg.Host+"`") {
		t.Errorf("check without credentials: %v\n%s", err, out)
	}

	// With them: the sample repository is found, the missing one warned of.
	out, err = runWith(t, pushWith, "", append(args, "--json")...)
	if err != nil {
		t.Fatalf("check with credentials: %v\n%s", err, out)
	}
	var doc struct {
		OK     bool
		Checks []checkRow
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	rows := map[string]checkRow{}
	for _, r := range doc.Checks {
		rows[r.Target] = r
	}
	if !doc.OK || rows["server TLS"].Status == "error" || !strings.Contains(rows["server TLS"].Detail, "localhost") {
		t.Errorf("TLS row: %+v", doc)
	}
	p := rows["providers --provider-template"]
	if p.Status != "ok" || p.Credentials != "docker config (check-user)" || p.Repository != reg.Host+"/providers/test/hello" || !strings.Contains(p.Detail, "has 1 version") {
		t.Errorf("provider row: %+v", p)
	}
	if r := rows["OpenTofu releases --tofu-repository"]; r.Status != "warning" || !strings.Contains(r.Detail, "does not exist") {
		t.Errorf("tofu row: %+v", r)
	}
}

// Every address given to --check-provider is answered: each in every
// mapping that admits it, and one no mapping admits with a line saying so
// (they were dropped without a word).
func TestServeCheckReportsEveryAddress(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.0.0"), "oci-layout:"+dir+"/test/hello")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	out, err = run(t, "serve", "--check", "--json", "--insecure-no-tls",
		"--provider-template", "oci-layout:"+dir+"/${namespace}/${type}", "--include", "example.com/test/*",
		"--check-provider", "example.com/test/hello", "--check-provider", "example.com/test/absent",
		"--check-provider", "example.com/other/hello")
	var doc struct{ Checks []checkRow }
	if jerr := json.Unmarshal([]byte(out), &doc); jerr != nil {
		t.Fatalf("--json: %v, %v\n%s", jerr, err, out)
	}
	repos, notAdmitted := map[string]string{}, ""
	for _, r := range doc.Checks {
		switch r.Target {
		case "providers --provider-template":
			repos[filepath.Base(r.Repository)] = r.Status
		case "provider example.com/other/hello":
			notAdmitted = r.Status + ": " + r.Detail
		}
	}
	if repos["hello"] != "ok" || repos["absent"] != "warning" || len(repos) != 2 {
		t.Errorf("each admitted address in its own line, want hello ok and absent warning: %v\n%s", repos, out)
	}
	if !strings.HasPrefix(notAdmitted, "warning: no provider mapping admits this address") {
		t.Errorf("the address no mapping admits: %q\n%s", notAdmitted, out)
	}
}

// checkRow is one line of `serve --check --json`.
type checkRow struct {
	Target, Mapping, Registry, Credentials, Repository, Status, Detail, Hint string
}

// A proxy started without the registry's credentials says so at start,
// and logs the hint beside each request that fails for it.
func TestServeLogsHints(t *testing.T) {
	reg := testenv.StartRegistryWithAuth(t, "log-user", "log-Pa55")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	code, _ := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 502 {
		t.Errorf("index.json without registry credentials: %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && strings.Count(s.logs.String(), "the registry wants credentials") < 2 {
		time.Sleep(50 * time.Millisecond)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, `msg="registry check failed"`) || strings.Count(logs, "hint=\"the registry wants credentials") < 2 {
		t.Errorf("no hint at start and with the request:\n%s", logs)
	}
}

// A start-up check that warns (here: the layout the template names does
// not exist yet) is logged as a warning, not as information.
func TestServeLogsStartupWarningsAsWarnings(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "not-yet")
	s := startServe(t, "--provider-template", "oci-layout:"+missing+"/${namespace}/${type}")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(s.logs.String(), `msg="registry check"`) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, line := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(line, `msg="registry check"`) && strings.Contains(line, "status=warning") {
			if !strings.Contains(line, "level=WARN") {
				t.Errorf("a start-up warning is logged below WARN: %s", line)
			}
			return
		}
	}
	t.Errorf("no start-up warning for a missing layout:\n%s", s.logs.String())
}

// A client that does not trust the proxy's certificate fails its TLS
// handshake; the proxy's log says so, with a hint, instead of Go's bare
// "http: TLS handshake error … bad certificate" (or curl's "bad record
// MAC").
func TestServeLogsUntrustingClientsWithAHint(t *testing.T) {
	s := startServe(t, "--provider-template", "oci-layout:"+t.TempDir()+"/${namespace}/${type}")
	tofu := testenv.Tofu(t, "provider_installation {\n  network_mirror { url = \""+s.URL+"/v1/mirror/\" }\n}\n")
	// The last SSL_CERT_FILE wins: one that trusts nothing of the test's.
	tofu.Env = append(tofu.Env, "SSL_CERT_FILE="+filepath.Join(t.TempDir(), "no-such-bundle.pem"))
	cfg := testenv.WriteConfig(t, map[string]string{"main.tf": "terraform {\n  required_providers {\n    hello = { source = \"example.com/test/hello\" }\n  }\n}\n"})
	if out, err := tofu.Try(t, cfg, "init", "-input=false", "-no-color"); err == nil || !strings.Contains(out, "certificate") {
		t.Fatalf("tofu trusted a certificate it should not: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(s.logs.String(), "TLS handshake failed") {
		time.Sleep(50 * time.Millisecond)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, `msg="TLS handshake failed"`) || !strings.Contains(logs, `hint="the client does not trust this server's certificate`) {
		t.Errorf("no hinted handshake failure in the log:\n%s", logs)
	}
}

// A network_mirror url without its trailing slash, or the proxy's base
// URL, makes tofu ask for paths the proxy does not serve; the answer and
// the log say which URL to use (they said only "no such path").
func TestServeHintsAtAWrongNetworkMirrorURL(t *testing.T) {
	s := startServe(t, "--provider-template", "oci-layout:"+t.TempDir()+"/${namespace}/${type}")
	cfg := testenv.WriteConfig(t, map[string]string{"main.tf": "terraform {\n  required_providers {\n    hello = { source = \"example.com/test/hello\" }\n  }\n}\n"})
	for _, url := range []string{s.URL + "/v1/mirror", s.URL + "/"} {
		tofu := testenv.Tofu(t, "provider_installation {\n  network_mirror { url = \""+url+"\" }\n}\n")
		out, err := tofu.Try(t, cfg, "init", "-input=false", "-no-color")
		if err == nil {
			t.Fatalf("%s: tofu init succeeded:\n%s", url, out)
		}
	}
	logs := s.logs.String()
	if n := strings.Count(logs, `hint="a client's network_mirror url lacks /v1/mirror/ or its trailing slash`); n < 2 {
		t.Errorf("%d hinted requests for the two wrong URLs, want 2 or more:\n%s", n, logs)
	}
	if code, body := s.get(t, "/v1/nothing/here"); code != 404 || strings.Contains(string(body), "network_mirror") {
		t.Errorf("an unrelated unknown path: %d %s", code, body)
	}
}
