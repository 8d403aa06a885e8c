package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/internal/mcpclient"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/assistant"
)

// The assistants' answers checked against what real tofu does with them
// (issue 43): each answer is taken from `oci-tofu serve --mcp` over its
// Streamable HTTP endpoint on loopback, as an assistant's client takes
// it, and given to real tofu through the same proxy.

// assistantSession is an MCP session with s's /mcp, reached as module
// addresses name the proxy (127.0.0.1:PORT), so that the snippets'
// sources are the addresses tofu installs from.
func assistantSession(t *testing.T, s *served) *mcp.ClientSession {
	t.Helper()
	return mcpclient.Connect(t, "https://"+moduleHost(s)+"/mcp", s.client)
}

// get_module_details' snippet, pasted unchanged into a root module,
// makes real tofu (and terraform, where installed) install the version asked for: the newest, and older
// ones a "~> X.Y" constraint would have upgraded (1.0.0 and 1.1.0 beside
// 1.2.0), and the newest of an older major version (1.2.0 beside 2.0.0).
func TestAssistantSnippetInstallsTheVersionAsked(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/acme/greeter/generic"
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"} {
		pushModule(t, writeGreeter(t, v), repo+":"+v)
	}
	s := startServe(t, "--mcp", "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")
	cs := assistantSession(t, s)
	host := moduleHost(s)
	for _, c := range []struct{ asked, version, constraint string }{
		{"", "2.0.0", "~> 2.0"},
		{"1.2.0", "1.2.0", "~> 1.2"},
		{"1.1.0", "1.1.0", "~> 1.1.0"},
		{"1.0.0", "1.0.0", "~> 1.0.0"},
	} {
		t.Run(c.version, func(t *testing.T) {
			args := map[string]any{"module_id": "acme/greeter/generic"}
			if c.asked != "" {
				args["version"] = c.asked
			}
			d := mcpclient.MustCall[assistant.ModuleDetails](t, cs, "get_module_details", args)
			if d.Version != c.version || d.Constraint != c.constraint || !strings.Contains(d.Usage, `version = "`+c.constraint+`"`) {
				t.Errorf("get_module_details %v: version %s, constraint %q, want %s and %q:\n%s", args, d.Version, d.Constraint, c.version, c.constraint, d.Usage)
			}
			for _, cli := range clis {
				dir := testenv.WriteConfig(t, map[string]string{"main.tf": d.Usage})
				out := cli.new(t, "").Run(t, dir, "init", "-input=false", "-no-color", "-backend=false")
				got := installedModules(t, dir)["greeter"]
				if want := [3]string{host + "/acme/greeter/generic", c.version, ".terraform/modules/greeter"}; got != want {
					t.Errorf("%s: the snippet for %s installs %v, want %v:\n%s\ninit:\n%s", cli.name, c.version, got, want, d.Usage, out)
				}
				main, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "greeter", "main.tf"))
				if err != nil || !strings.Contains(string(main), fmt.Sprintf("version = %q", c.version)) {
					t.Errorf("%s: installed main.tf is not %s's: %v\n%s", cli.name, c.version, err, main)
				}
			}
		})
	}
}

// get_lock_blocks for a provider version and two platforms is the block
// `oci-tofu lock` writes for the same provider, version and platforms:
// the same version, constraints and hashes.
func TestAssistantLockBlocksAreWhatLockWrites(t *testing.T) {
	reg := testenv.StartRegistry(t)
	template := reg.Host + "/providers/${namespace}/${type}"
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	s := startServe(t, "--mcp", "--provider-template", template)
	cs := assistantSession(t, s)
	platforms := []string{"linux_amd64", "darwin_arm64"}
	found := mcpclient.MustCall[assistant.SearchProvidersOut](t, cs, "search_providers", map[string]any{"provider_query": "hello"})
	if len(found.Providers) != 1 {
		t.Fatalf("search_providers finds %+v", found.Providers)
	}
	addr := found.Providers[0].Address // the address the tools hold it under
	host, _, _ := strings.Cut(addr, "/")
	for _, version := range []string{"1.1.0", "1.0.0"} {
		t.Run(version, func(t *testing.T) {
			out := mcpclient.MustCall[assistant.LockOut](t, cs, "get_lock_blocks", map[string]any{
				"providers": []map[string]any{{"host": host, "namespace": "test", "name": "hello", "version": version}},
				"platforms": platforms,
			})
			file := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
			if err := os.WriteFile(file, []byte(out.Lock), 0o644); err != nil {
				t.Fatal(err)
			}
			fromTool, err := lockfile.Read(file)
			if err != nil || len(fromTool.Providers) != 1 || len(out.Blocks) != 1 {
				t.Fatalf("get_lock_blocks: %v, %d blocks\n%s", err, len(out.Blocks), out.Lock)
			}
			tool := fromTool.Providers[0]
			if tool.Constraints == "" || !hasPrefixed(tool.Hashes, "h1:", len(platforms)) || !hasPrefixed(tool.Hashes, "zh:", 1) {
				t.Fatalf("get_lock_blocks writes no constraints, or not an h1 a platform and a zh:\n%s", out.Lock)
			}
			t.Logf("get_lock_blocks:\n%s", out.Lock)
			// The same provider, version and constraints, locked by lock:
			// the configuration requires the tool's constraints, and a
			// lock file without hashes holds the version (what an older
			// version takes: tofu keeps a locked version that meets the
			// constraints).
			dir := testenv.WriteConfig(t, map[string]string{
				"main.tf":             strings.Replace(fmt.Sprintf(helloConfig, tool.Constraints), "example.com/test/hello", addr, 1),
				".terraform.lock.hcl": fmt.Sprintf("provider %q {\n  version     = %q\n  constraints = %q\n}\n", addr, version, tool.Constraints),
			})
			args := []string{"lock", "--provider-template", template}
			for _, p := range platforms {
				args = append(args, "--platform", p)
			}
			mustRun(t, append(args, dir)...)
			written := lockEntry(t, dir, addr, version)
			if tool.Address != written.Address || tool.Version != written.Version || tool.Constraints != written.Constraints {
				t.Errorf("get_lock_blocks locks %s %s (%q), lock %s %s (%q)", tool.Address, tool.Version, tool.Constraints, written.Address, written.Version, written.Constraints)
			}
			if got, want := sortedStrings(tool.Hashes), sortedStrings(written.Hashes); !slices.Equal(got, want) {
				t.Errorf("get_lock_blocks hashes\n%q\nlock's\n%q", got, want)
			}
			if got := sortedStrings(out.Blocks[0].Platforms); !slices.Equal(got, sortedStrings(platforms)) {
				t.Errorf("get_lock_blocks platforms %v, asked %v", out.Blocks[0].Platforms, platforms)
			}
		})
	}
}

// hasPrefixed says whether at least n of hashes start with prefix.
func hasPrefixed(hashes []string, prefix string, n int) bool {
	count := 0
	for _, h := range hashes {
		if strings.HasPrefix(h, prefix) {
			count++
		}
	}
	return count >= n
}

// assistantPolicy denies one version of the greeter module and of the
// hello provider and deprecates another of each.
const assistantPolicy = `
module "*/acme/greeter/generic" {
  name = "greeter-lifecycle"
  deny = ["1.2.0"]
  deprecated {
    versions = "1.1.0"
    message  = "greeter 1.1 is end of life: move to 2.x"
  }
}

provider "*/*/*" {
  name = "hello-lifecycle"
  deny = ["1.1.0"]
  deprecated {
    versions = "1.0.0"
    message  = "hello 1.0 is end of life: move to 2.x"
  }
}
`

// get_policy_verdict says what real tofu is told: a version it denies
// does not install, the reason given where the protocol carries one (the
// provider registry protocol's warnings), and one it deprecates
// installs, with the deprecation's message where the protocol carries
// one. The Module Registry Protocol carries neither (docs/policy.md):
// tofu prints no reason for a denied module version nor a word on a
// deprecated one, so the messages are checked on the provider.
func TestAssistantVerdictIsWhatTofuIsTold(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		pushModule(t, writeGreeter(t, v), reg.Host+"/modules/acme/greeter/generic:"+v)
	}
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(assistantPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--mcp", "--policy", file, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}",
		"--provider-template", reg.Host+"/providers/${namespace}/${type}")
	modules := assistantSession(t, s)
	// Providers are named through localhost:PORT, the host tofu gets
	// them from: a provider's registry hostname is the proxy's without
	// the port, here localhost, as the reasons tofu is told say.
	providers := mcpclient.Connect(t, s.URL+"/mcp", s.client)
	verdict := func(address, version string) assistant.Verdict {
		t.Helper()
		cs := modules
		if strings.Count(address, "/") < 3 {
			cs = providers
		}
		v := mcpclient.MustCall[assistant.Verdict](t, cs, "get_policy_verdict", map[string]any{"address": address, "version": version})
		t.Logf("get_policy_verdict %s %s: %+v", address, version, v)
		return v
	}
	init := func(t *testing.T, config string) (string, error) {
		t.Helper()
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": config})
		return testenv.Tofu(t, "").Try(t, dir, "init", "-input=false", "-no-color", "-backend=false")
	}

	module := moduleHost(s) + "/acme/greeter/generic"
	moduleConfig := func(version string) string {
		return fmt.Sprintf("module \"greeter\" {\n  source  = %q\n  version = %q\n  name    = \"policy\"\n  zones   = []\n}\n", module, version)
	}
	t.Run("module denied", func(t *testing.T) {
		v := verdict(module, "1.2.0")
		if v.Verdict != "denied" || v.Installs || v.Rule != "greeter-lifecycle" || v.Reason == "" {
			t.Errorf("verdict of the denied 1.2.0: %+v", v)
		}
		// The listing leaves 1.2.0 out: tofu finds no such version. Its
		// download, asked for all the same, is refused with the reason.
		out, err := init(t, moduleConfig("1.2.0"))
		if err == nil || strings.Contains(out, "Downloading "+module+" 1.2.0") {
			t.Errorf("tofu init installs the denied 1.2.0 (%v):\n%s", err, out)
		}
		t.Logf("tofu init of the denied 1.2.0:\n%s", out)
		var refused struct{ Errors []string }
		code, body := getFrom(t, s, "https://"+moduleHost(s)+"/v1/modules/acme/greeter/generic/1.2.0/download") // as tofu names the proxy
		if err := json.Unmarshal(body, &refused); code != 404 || err != nil || len(refused.Errors) != 1 || !strings.HasSuffix(refused.Errors[0], ": "+v.Reason) {
			t.Errorf("download of the denied 1.2.0: %d %s, want the verdict's reason %q", code, body, v.Reason)
		}
	})
	t.Run("module deprecated", func(t *testing.T) {
		v := verdict(module, "1.1.0")
		if v.Verdict != "deprecated" || !v.Installs || v.Message != "greeter 1.1 is end of life: move to 2.x" {
			t.Errorf("verdict of the deprecated 1.1.0: %+v", v)
		}
		out, err := init(t, moduleConfig("1.1.0"))
		if err != nil || !strings.Contains(out, "Downloading "+module+" 1.1.0 for greeter") {
			t.Errorf("tofu init does not install the deprecated 1.1.0 (%v):\n%s", err, out)
		}
		t.Logf("tofu init of the deprecated 1.1.0 (the protocol has no word for a deprecation):\n%s", out)
	})

	found := mcpclient.MustCall[assistant.SearchProvidersOut](t, providers, "search_providers", map[string]any{"provider_query": "hello"})
	if len(found.Providers) != 1 {
		t.Fatalf("search_providers finds %+v", found.Providers)
	}
	held := found.Providers[0].Address // localhost/test/hello
	provider := s.Host + "/test/hello"
	providerConfig := func(version string) string {
		return strings.Replace(fmt.Sprintf(helloConfig, version), "example.com/test/hello", provider, 1)
	}
	t.Run("provider denied", func(t *testing.T) {
		v := verdict(held, "1.1.0")
		if v.Verdict != "denied" || v.Installs || v.Rule != "hello-lifecycle" || v.Reason == "" {
			t.Errorf("verdict of the denied 1.1.0: %+v", v)
		}
		out, err := init(t, providerConfig("1.1.0"))
		if flat := strings.Join(strings.Fields(out), " "); err == nil || strings.Contains(out, "Installed "+provider) || !strings.Contains(flat, v.Reason) {
			t.Errorf("tofu init does not refuse 1.1.0 with the verdict's reason %q (%v):\n%s", v.Reason, err, out)
		}
	})
	t.Run("provider deprecated", func(t *testing.T) {
		v := verdict(held, "1.0.0")
		if v.Verdict != "deprecated" || !v.Installs || v.Message != "hello 1.0 is end of life: move to 2.x" {
			t.Errorf("verdict of the deprecated 1.0.0: %+v", v)
		}
		out, err := init(t, providerConfig("1.0.0"))
		if flat := strings.Join(strings.Fields(out), " "); err != nil || !strings.Contains(out, "Installed "+provider+" v1.0.0") ||
			!strings.Contains(flat, "version 1.0.0 of "+provider+" is deprecated: "+v.Message) {
			t.Errorf("tofu init does not install 1.0.0 with the verdict's message %q (%v):\n%s", v.Message, err, out)
		}
	})
}

// getFrom GETs url (s reached by another name) with s's client.
func getFrom(t *testing.T, s *served, url string) (int, []byte) {
	t.Helper()
	resp, err := s.client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
