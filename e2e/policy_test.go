package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// helloPolicy allows hello from 1.0 on but denies 1.1.0, the newest
// release a ">= 1.0" constraint would otherwise pick.
const helloPolicy = `
provider "*/*/*" {
  name     = "hello-policy"
  versions = ">= 1.0"
  deny     = ["1.1.0"]
}
`

// serve --policy: of the versions a ">= 1.0" constraint admits, real tofu
// (network mirror and registry protocol) and terraform (registry
// protocol) install the newest the policy allows, 1.0.0, where an
// unpoliced proxy offers 1.1.0; a direct request for 1.1.0 is 404 naming
// the rule.
func TestPolicy(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.0.0", "1.1.0", "2.0.0-rc1")
	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(helloPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	template := reg.Host + "/providers/${namespace}/${type}"
	plain := startServe(t, "--provider-template", template)
	s := startServe(t, "--provider-template", template, "--policy", file)

	if code, body := plain.get(t, "/v1/mirror/example.com/test/hello/index.json"); code != 200 || !strings.Contains(string(body), "1.1.0") {
		t.Fatalf("without the policy, index.json: %d %s", code, body)
	}
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || strings.Contains(string(body), "1.1.0") || !strings.Contains(string(body), "1.0.0") {
		t.Errorf("index.json: %d %s", code, body)
	}
	const denied = `1.1.0 is denied by the policy's rule "hello-policy"`
	for path, who := range map[string]string{
		"/v1/mirror/example.com/test/hello/1.1.0.json":        "example.com/test/hello",
		"/v1/providers/test/hello/1.1.0/download/linux/amd64": "localhost/test/hello", // the registry hostname: the proxy's, without port
	} {
		var e struct{ Errors []string }
		code, body := s.get(t, path)
		if err := json.Unmarshal(body, &e); code != 404 || err != nil || len(e.Errors) != 1 || !strings.HasSuffix(e.Errors[0], who+" "+denied) {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}

	installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello "+denied)
}

// oci-tofu policy test: one allow, one deny, each naming its rule, exit 0;
// and a file with an unknown attribute refused with its line and column,
// by policy test and by serve.
func TestPolicyTest(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.hcl")
	os.WriteFile(file, []byte(helloPolicy), 0o644)
	out := mustRun(t, "policy", "test", "--policy", file, "example.com/test/hello@1.0.0", "example.com/test/hello@1.1.0")
	if !strings.Contains(out, `allow  provider example.com/test/hello@1.0.0  rule "hello-policy"`) ||
		!strings.Contains(out, `deny   provider example.com/test/hello@1.1.0  rule "hello-policy": example.com/test/hello `+`1.1.0 is denied`) {
		t.Errorf("policy test:\n%s", out)
	}
	out = mustRun(t, "policy", "test", "--json", "--policy", file, "example.com/test/hello@1.1.0")
	var doc struct {
		Decisions []struct {
			Allow bool
			Rule  string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Decisions) != 1 || doc.Decisions[0].Allow || doc.Decisions[0].Rule != "hello-policy" {
		t.Errorf("policy test --json: %v\n%s", err, out)
	}

	bad := filepath.Join(dir, "bad.hcl")
	os.WriteFile(bad, []byte("provider \"a/b\" {\n  colour = \"7d\"\n}\n"), 0o644)
	want := bad + `:2:3: Unsupported argument: An argument named "colour" is not expected here.`
	if out, err := run(t, "policy", "test", "--policy", bad, "a/b"); err == nil || !strings.Contains(out, want) {
		t.Errorf("policy test with a bad file: %v\n%s", err, out)
	}
	base := []string{"serve", "--check", "--provider-template", "oci-layout:" + dir + "/${namespace}/${type}"}
	if out, err := run(t, append(base, "--policy", bad)...); err == nil || !strings.Contains(out, "--policy: "+want) {
		t.Errorf("serve with a bad file: %v\n%s", err, out)
	}
}

// serve --policy applies to modules: of the versions "~> 1.0" admits,
// real tofu installs 1.0.0 when the policy denies the newest, 1.2.0, and
// a direct download of 1.2.0 is 404 naming the rule.
func TestPolicyModules(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	pushGreetingVersions(t, reg.Host+"/modules/acme/greeting/aws", "1.0.0", "1.2.0")
	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(`module "*/acme/greeting/aws" {
  name = "greeting"
  deny = ["1.2.0"]
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}", "--policy", file)
	if code, body := s.get(t, "/v1/modules/acme/greeting/aws/1.2.0/download"); code != 404 || !strings.Contains(string(body), `denied by the policy's rule \"greeting\"`) {
		t.Errorf("download of the denied 1.2.0: %d %s", code, body)
	}
	host := moduleHost(s)
	cli := testenv.Tofu(t, "")
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(`
module "pick" {
  source  = "%s/acme/greeting/aws"
  version = "~> 1.0"
  name    = "policy"
}
`, host)})
	out := cli.Run(t, dir, "init", "-input=false", "-no-color", "-backend=false")
	if !strings.Contains(out, "Downloading "+host+"/acme/greeting/aws 1.0.0 for pick") {
		t.Fatalf("the allowed 1.0.0 not installed:\n%s", out)
	}
	main, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "pick", "main.tf"))
	if err != nil || !strings.Contains(string(main), "Hello from 1.0.0, ") {
		t.Errorf("installed main.tf is not 1.0.0's: %v\n%s", err, main)
	}
}
