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

// pushGreetingVersions pushes the greeting fixture under several version
// tags of repo, each copy greeting with its own version, so that the
// installed package tells which version was picked.
func pushGreetingVersions(t *testing.T, repo string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		dir := filepath.Join(t.TempDir(), "greeting")
		testenv.MustRun(t, "", nil, "cp", "-r", testenv.Testdata(t, "modules", "greeting"), dir)
		main := filepath.Join(dir, "main.tf")
		b, err := os.ReadFile(main)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(main, []byte(strings.Replace(string(b), `"Hello, `, `"Hello from `+v+`, `, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "push", "module", "--quiet", dir, repo+":"+v)
	}
}

// moduleHost is the proxy's address as a module registry hostname. Module
// registry addresses need a hostname with a dot ("localhost:PORT" is
// refused by both CLIs, unlike in provider addresses), so the tests use
// 127.0.0.1:PORT, which the test certificate covers.
func moduleHost(s *served) string {
	return strings.Replace(s.Host, "localhost", "127.0.0.1", 1)
}

const moduleProxyConfig = `
module "pick" {
  source  = "%[1]s/acme/greeting/aws"
  version = "~> 1.0"
  name    = "proxy"
}

module "sub" {
  source  = "%[1]s/acme/greeting/aws//modules/shout"
  version = "2.0.0"
  text    = "from a subdirectory"
}

output "pick" { value = module.pick.greeting }
output "nested" { value = module.pick.shouted }
output "sub" { value = module.sub.text }
`

// Real tofu and terraform install modules through the proxy's Module
// Registry Protocol, the proxy being the registry host localhost:PORT:
// the version constraint picks the newest matching version (not a
// pre-release, not 2.0.0) out of several pushed, a //subdir source
// installs a subdirectory of the package, and the configuration applies.
// Neither CLI needs any configuration beyond trusting the CA.
func TestModulesThroughProxy(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	pushGreetingVersions(t, reg.Host+"/modules/acme/greeting/aws", "1.0.0", "1.2.0", "1.3.0-rc1", "2.0.0")
	s := startServe(t, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")

	code, body := s.get(t, "/.well-known/terraform.json")
	var disco map[string]string
	if err := json.Unmarshal(body, &disco); code != 200 || err != nil || disco["modules.v1"] != "/v1/modules/" {
		t.Fatalf("discovery: %d %s", code, body)
	}
	if _, ok := disco["providers.v1"]; ok {
		t.Errorf("providers.v1 advertised without --provider-template: %s", body)
	}

	host := moduleHost(s)
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, "")
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(moduleProxyConfig, host)})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			for _, want := range []string{
				"Downloading " + host + "/acme/greeting/aws 1.2.0 for pick",
				"Downloading " + host + "/acme/greeting/aws 2.0.0 for sub",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("init output lacks %q:\n%s", want, out)
				}
			}
			// The package is the pushed one, files and modes as packed.
			got := readTree(t, filepath.Join(dir, ".terraform", "modules", "pick"))
			want := greetingPackage(t)
			want["main.tf"] = strings.Replace(want["main.tf"], `"Hello, `, `"Hello from 1.2.0, `, 1)
			for name, content := range want {
				if got[name] != content {
					t.Errorf("installed %s differs from the package (have files %v)", name, keys(got))
				}
			}
			if len(got) != len(want) {
				t.Errorf("installed files %v, want %v", keys(got), keys(want))
			}

			cli.Run(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
			var outputs map[string]struct{ Value string }
			if err := json.Unmarshal([]byte(cli.Run(t, dir, "output", "-json")), &outputs); err != nil {
				t.Fatal(err)
			}
			for name, value := range map[string]string{"pick": "Hello from 1.2.0, proxy!", "nested": "HELLO, PROXY", "sub": "FROM A SUBDIRECTORY"} {
				if outputs[name].Value != value {
					t.Errorf("output %s = %q, want %q", name, outputs[name].Value, value)
				}
			}
		})
	}
	if !strings.Contains(s.logs.String(), "handler=module_archives") {
		t.Errorf("the packages did not come through the proxy's archive URLs:\n%s", s.logs.String())
	}
}

// With client authentication, the CLIs send the token of their credentials
// block to modules.v1; terraform fetches the signed archive URL without
// it, tofu 1.12 the plain archive URL with it (use_registry_credentials).
func TestModulesThroughProxyWithAuth(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	pushGreetingVersions(t, reg.Host+"/modules/acme/greeting/aws", "1.0.0", "2.0.0")
	token := "module-token-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte(token+"\n"), 0o600)
	s := startServe(t, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}", "--auth-token-file", tokens)
	host := moduleHost(s)
	cfg := fmt.Sprintf(moduleProxyConfig, host)

	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			// Without credentials: refused, with the proxy's explanation.
			anon := c.new(t, "")
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
			if out, err := anon.Try(t, dir, "init", "-input=false", "-no-color"); err == nil {
				t.Fatalf("init without credentials succeeded:\n%s", out)
			}
			cli := c.new(t, fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, token))
			dir = testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "aws 1.0.0 for pick") {
				t.Errorf("unexpected init output:\n%s", out)
			}
		})
	}
	logs := s.logs.String()
	if strings.Contains(logs, token) || strings.Contains(logs, "signature=") {
		t.Errorf("secrets in the proxy log:\n%s", logs)
	}
	// tofu 1.12 took the direct location (200, fetched with its token),
	// terraform the signed X-Terraform-Get URL (204).
	for _, want := range []string{"/1.0.0/download status=200", "/1.0.0/download status=204"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no download answer %q in the proxy log:\n%s", want, logs)
		}
	}
}

// serve needs something to serve, and says what is wrong with a template
// before it listens.
func TestServeConfigurationErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "at least one of --provider-template"},
		{[]string{"--module-template", "localhost:5000/m/${namespace}/${name}"}, "${system}"},
		{[]string{"--module-template", "localhost:5000/m/${namespace}/${name}/${system}/${type}"}, "unknown placeholder ${type}"},
		{[]string{"--tofu-repository", "localhost:5000/tools/opentofu:1.9.0"}, "without a tag"},
		{[]string{"--tofu-repository", "Not A Reference"}, "--tofu-repository"},
	} {
		out, err := run(t, append([]string{"serve", "--insecure-no-tls", "--listen", "127.0.0.1:0"}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("serve %v: want an error mentioning %q, got %v:\n%s", c.args, c.want, err, out)
		}
	}
}
