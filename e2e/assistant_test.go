package e2e

import (
	"fmt"
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
// makes real tofu install the version asked for: the newest, and older
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
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": d.Usage})
			out := testenv.Tofu(t, "").Run(t, dir, "init", "-input=false", "-no-color", "-backend=false")
			got := installedModules(t, dir)["greeter"]
			if want := [3]string{host + "/acme/greeter/generic", c.version, ".terraform/modules/greeter"}; got != want {
				t.Errorf("the snippet for %s installs %v, want %v:\n%s\ninit:\n%s", c.version, got, want, d.Usage, out)
			}
			main, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "greeter", "main.tf"))
			if err != nil || !strings.Contains(string(main), fmt.Sprintf("version = %q", c.version)) {
				t.Errorf("installed main.tf is not %s's: %v\n%s", c.version, err, main)
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
