package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// mcpProxy is a proxy serving the assistants' tools at /mcp (loopback)
// over a registry holding, for each tenant T, the module
// T/greeter/generic 1.0.0 and 1.1.0 and the provider T/hello 1.0.0,
// with a vulnerability database and an audit trail.
type mcpProxy struct {
	*served
	args []string // serve's arguments but for where it listens
	ca   *testenv.CA
	// providerHost is the hostname the catalogue lists providers under.
	providerHost string
	contract     []string
}

func startMCPProxy(t *testing.T, policyFile string, tenants ...string) *mcpProxy {
	t.Helper()
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	for _, tenant := range tenants {
		for _, v := range []string{"1.0.0", "1.1.0"} {
			pushModule(t, writeGreeter(t, v), reg.Host+"/modules/"+tenant+"/greeter/generic:"+v)
		}
		mustRun(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
			testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/"+tenant+"/hello")
	}
	args := []string{"--mcp", "--module-template", reg.Host + "/modules/${namespace}/${name}/${system}",
		"--provider-template", reg.Host + "/providers/${namespace}/${type}",
		"--vuln-db", vulnFixtureDB(t), "--audit-log", filepath.Join(t.TempDir(), "audit.log")}
	if policyFile != "" {
		args = append(args, "--policy", policyFile)
	}
	s := startServe(t, args...)
	return &mcpProxy{served: s, args: args, ca: testenv.NewCA(t), providerHost: "localhost", contract: contractTools(t)}
}

// plainHTTP starts a second proxy over the same registry, on loopback
// without TLS (serve --insecure-no-tls): the local server the conformance
// suite's DNS rebinding scenario is about. It returns its /mcp URL.
func (p *mcpProxy) plainHTTP(t *testing.T) string {
	t.Helper()
	port := testenv.FreePort(t)
	cmd := exec.Command(ociTofu, append([]string{"serve", "--insecure-no-tls", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--shutdown-timeout", "10s"}, p.args...)...)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+p.ca.CertFile, "DOCKER_CONFIG="+t.TempDir(), "OCI_TOFU_SHUTDOWN_DELAY=0s")
	logs := &testenv.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("plain serve log:\n%s", logs.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base + "/mcp"
			}
		}
	}
	t.Fatalf("plain serve did not become healthy:\n%s", logs.String())
	return ""
}

// contractTools are the names of the tools the committed contract lists.
func contractTools(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "protocol", "assistant", "testdata", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// inspector runs the MCP Inspector's CLI against one transport of the
// proxy's tools.
type inspector struct {
	bin    string
	target []string // the server: a command (stdio) or a URL (Streamable HTTP)
	env    []string
}

// transports are the two ways an assistant reaches the tools: oci-tofu
// mcp on its machine, asking the proxy as a client (stdio), and the
// proxy's own /mcp (Streamable HTTP); with token, as that client.
func (p *mcpProxy) transports(t *testing.T, token string) map[string]inspector {
	bin := testenv.Tool(t, "mcp-inspector")
	env := append(testenvEnv(t), "NODE_EXTRA_CA_CERTS="+p.ca.CertFile)
	stdio := []string{ociTofu, "mcp", "--proxy", p.URL, "--proxy-ca-file", p.ca.CertFile}
	http := []string{p.URL + "/mcp"}
	if token != "" {
		stdio = append([]string{"-e", "OCI_TOFU_TOKEN=" + token}, stdio...)
		http = append(http, "--header", "Authorization: Bearer "+token)
	}
	return map[string]inspector{"stdio": {bin, stdio, env}, "http": {bin, http, env}}
}

// run is the inspector's output (JSON on stdout) and its error.
func (in inspector) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.bin, append(append([]string{"--cli"}, in.target...), args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = in.env, &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// call is tools/call of tool with the arguments (key=value, values read
// as JSON where they parse), decoded: its structured content, and
// whether it is an error.
func (in inspector) call(t *testing.T, tool string, args ...string) (map[string]any, bool, string) {
	t.Helper()
	cli := []string{"--method", "tools/call", "--tool-name", tool}
	if len(args) > 0 {
		cli = append(append(cli, "--tool-arg"), args...)
	}
	out, errOut, err := in.run(t, cli...)
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Content           []struct{ Text string }
	}
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
		return nil, true, strings.TrimSpace(out + errOut + " " + errString(err))
	}
	text := ""
	for _, c := range res.Content {
		text += c.Text
	}
	return res.StructuredContent, res.IsError || err != nil, text
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The MCP Inspector (npm, its CLI mode) lists the contract's tools over
// stdio (oci-tofu mcp --proxy) and over Streamable HTTP (serve --mcp),
// finds their schemas portable (--strict: no error-severity problem),
// and calls each against the fixtures; an unknown tool and a wrong
// argument type are refused with an error that names them.
func TestMCPInspectorCallsEveryTool(t *testing.T) {
	p := startMCPProxy(t, "", "test")
	for name, in := range p.transports(t, "") {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := in.run(t, "--method", "tools/list", "--strict")
			if err != nil {
				t.Fatalf("tools/list --strict: %v\n%s\n%s", err, out, errOut)
			}
			var list struct{ Tools []struct{ Name string } }
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("tools/list: %v\n%s", err, out)
			}
			var listed []string
			for _, tl := range list.Tools {
				listed = append(listed, tl.Name)
			}
			slices.Sort(listed)
			if want := slices.Sorted(slices.Values(p.contract)); !slices.Equal(listed, want) {
				t.Errorf("tools/list %q, the contract %q", listed, want)
			}
			called := p.callEveryTool(t, in)
			if missing := slices.DeleteFunc(slices.Clone(p.contract), func(n string) bool { return called[n] }); len(missing) > 0 {
				t.Errorf("not called: %q", missing)
			}
			if _, isErr, msg := in.call(t, "no_such_tool"); !isErr || !strings.Contains(msg, "no_such_tool") {
				t.Errorf("unknown tool: error %v, %q", isErr, msg)
			}
			if _, isErr, msg := in.call(t, "search_modules", "page=\"two\""); !isErr || !strings.Contains(msg, "page") {
				t.Errorf("page as a string: error %v, %q", isErr, msg)
			}
		})
	}
}

// callEveryTool calls each tool with arguments the fixtures answer, and
// checks what each says; it returns the tools called.
func (p *mcpProxy) callEveryTool(t *testing.T, in inspector) map[string]bool {
	t.Helper()
	module := p.Host + "/test/greeter/generic"
	called := map[string]bool{}
	call := func(tool string, args ...string) map[string]any {
		t.Helper()
		called[tool] = true
		res, isErr, text := in.call(t, tool, args...)
		if isErr || res == nil {
			t.Errorf("%s %q: an error: %s", tool, args, text)
			return map[string]any{}
		}
		return res
	}
	want := func(tool, field string, got any, want string) {
		t.Helper()
		if s, _ := got.(string); s != want {
			t.Errorf("%s: %s %v, want %q", tool, field, got, want)
		}
	}
	hits := call("search_modules", "module_query=greeter")
	if !strings.Contains(mustJSON(t, hits["modules"]), module) {
		t.Errorf("search_modules greeter: %s", mustJSON(t, hits))
	}
	d := call("get_module_details", "module_id="+module, "version=1.0.0")
	want("get_module_details", "version", d["version"], "1.0.0")
	want("get_module_details", "latest", d["latest"], "1.1.0")
	if u, _ := d["usage"].(string); !strings.Contains(u, `source  = "`+module+`"`) {
		t.Errorf("get_module_details usage:\n%s", u)
	}
	if ins := mustJSON(t, d["inputs"]); !strings.Contains(ins, `"name":"zones"`) || !strings.Contains(ins, `"default":"!"`) {
		t.Errorf("get_module_details inputs: %s", ins)
	}
	want("get_latest_module_version", "version",
		call("get_latest_module_version", "module_publisher=test", "module_name=greeter", "module_provider=generic")["version"], "1.1.0")
	ps := mustJSON(t, call("search_providers", "provider_query=hello")["providers"])
	if !strings.Contains(ps, "test/hello") {
		t.Errorf("search_providers hello: %s", ps)
	}
	provider := []string{"host=" + p.providerHost, "namespace=test", "name=hello"}
	// Without a host, as an assistant asks after search_providers: the
	// provider is not held under registry.opentofu.org, but under the
	// proxy's own host (a --provider-template without ${hostname}).
	pd := call("get_provider_details", "namespace=test", "name=hello")
	want("get_provider_details", "address", pd["address"], p.providerHost+"/test/hello")
	want("get_provider_details", "version", pd["version"], "1.0.0")
	if plats := mustJSON(t, pd["platforms"]); !strings.Contains(plats, "linux_amd64") {
		t.Errorf("get_provider_details platforms: %s", plats)
	}
	want("get_latest_provider_version", "version", call("get_latest_provider_version", provider...)["version"], "1.0.0")
	want("get_policy_verdict", "verdict", call("get_policy_verdict", "address="+module, "version=1.1.0")["verdict"], "allowed")
	want("get_vulnerabilities", "version", call("get_vulnerabilities", append(provider, "version=1.0.0")...)["version"], "1.0.0")
	usage := call("get_version_usage", provider...)
	if _, ok := usage["counts"]; !ok {
		t.Errorf("get_version_usage: %s", mustJSON(t, usage))
	}
	lock := call("get_lock_blocks", `providers=[{"host":"`+p.providerHost+`","namespace":"test","name":"hello","version":"1.0.0"}]`, `platforms=["linux_amd64"]`)
	if l, _ := lock["lock"].(string); !strings.Contains(l, `version     = "1.0.0"`) || !strings.Contains(l, "zh:") {
		t.Errorf("get_lock_blocks:\n%s", mustJSON(t, lock))
	}
	return called
}

// Two clients, one proxy, the MCP Inspector as each: after one has
// called every tool on its own modules and providers (warming every
// cache), the other, over stdio and over /mcp, finds none of them, is
// told of each as of an address that holds nothing, and sees only its
// own in searches.
func TestMCPInspectorScopes(t *testing.T) {
	tokens := map[string]string{"acme": "acme-token-for-the-mcp-test", "beta": "beta-token-for-the-mcp-test"}
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	var clients strings.Builder
	for tenant, token := range tokens {
		fmt.Fprintf(&clients, "client %q {\n  tokens    = [%q]\n  modules   = [\"*/%s/*/*\"]\n  providers = [\"localhost/%s/*\"]\n}\n",
			tenant, policy.TokenHash(token), tenant, tenant)
	}
	if err := os.WriteFile(pol, []byte(clients.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startMCPProxy(t, pol, "acme", "beta")
	for own, other := range map[string]string{"acme": "beta", "beta": "acme"} {
		warm := p.transports(t, tokens[other])["http"]
		for tool, args := range p.tenantCalls(other) {
			if _, isErr, text := warm.call(t, tool, args...); isErr {
				t.Errorf("%s's own %s: %s", other, tool, text)
			}
		}
		for transport, in := range p.transports(t, tokens[own]) {
			for tool, args := range p.tenantCalls(other) {
				res, isErr, text := in.call(t, tool, args...)
				if !isErr || len(res) > 0 {
					t.Errorf("%s over %s: %s of %s's: %v %s %s", own, transport, tool, other, isErr, mustJSON(t, res), text)
				}
				_, _, none := in.call(t, tool, strings.Split(strings.ReplaceAll(strings.Join(args, "\x00"), other, "nobody"), "\x00")...)
				if strings.ReplaceAll(text, other, "nobody") != none {
					t.Errorf("%s over %s: %s of %s's is told otherwise than of nothing:\n%s\n%s", own, transport, tool, other, text, none)
				}
			}
			for tool, field := range map[string]string{"search_modules": "modules", "search_providers": "providers"} {
				res, isErr, text := in.call(t, tool)
				if found := mustJSON(t, res[field]); isErr || strings.Contains(found, other+"/") || !strings.Contains(found, own+"/") {
					t.Errorf("%s over %s: %s finds %s %s", own, transport, tool, found, text)
				}
			}
		}
	}
}

// tenantCalls are the calls of every tool naming one of tenant's
// modules or providers.
func (p *mcpProxy) tenantCalls(tenant string) map[string][]string {
	module := p.Host + "/" + tenant + "/greeter/generic"
	provider := []string{"host=" + p.providerHost, "namespace=" + tenant, "name=hello"}
	return map[string][]string{
		"get_module_details":          {"module_id=" + module},
		"get_latest_module_version":   {"module_publisher=" + tenant, "module_name=greeter", "module_provider=generic"},
		"get_policy_verdict":          {"address=" + module, "version=1.1.0"},
		"get_provider_details":        provider,
		"get_latest_provider_version": provider,
		"get_vulnerabilities":         append(slices.Clone(provider), "version=1.0.0"),
		"get_lock_blocks":             {`providers=[{"host":"` + p.providerHost + `","namespace":"` + tenant + `","name":"hello","version":"1.0.0"}]`},
	}
}

// conformanceScenarios are the MCP conformance suite's server scenarios
// that apply to a stateless, read-only tools server. Left out, because
// they test what this server does not offer and need not: the
// tools-call-* scenarios and json-schema-2020-12 (they call the suite's
// own test_* tools, which a server must add to pass them),
// completion-complete, resources-read-*, resources-templates-read,
// resources-(un)subscribe and prompts-get-* (no prompts, resources or
// templates are offered), elicitation-* and tools-call-sampling (a
// read-only tool never asks the client anything), and
// server-sse-polling and server-sse-multiple-streams (a stateless server
// gives no session and opens no server-to-client stream; the latter
// checks nothing then, with a warning). dns-rebinding-protection runs against a plain-HTTP
// loopback proxy, the case it states it is for: it sends the Origin
// http://localhost:PORT, which over TLS is another origin than the
// proxy's and refused as one.
var conformanceScenarios = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list", "resources-list", "prompts-list",
}

// The official MCP conformance suite (npm) passes its server scenarios
// that apply to a read-only tools server against serve --mcp over TLS,
// and its DNS rebinding scenario against serve --mcp on plain-HTTP
// loopback: each with no failed check.
func TestMCPConformanceServerScenarios(t *testing.T) {
	conformance := testenv.Tool(t, "mcp-conformance")
	p := startMCPProxy(t, "", "test")
	env := append(testenvEnv(t), "NODE_EXTRA_CA_CERTS="+p.ca.CertFile)
	check := func(url, scenario string) {
		t.Helper()
		out, err := testenv.Run(t, t.TempDir(), env, conformance, "server", "--url", url, "--scenario", scenario)
		if err != nil || !strings.Contains(out, " 0 failed") {
			t.Errorf("conformance %s against %s: %v\n%s", scenario, url, err, out)
		}
	}
	for _, scenario := range conformanceScenarios {
		check(p.URL+"/mcp", scenario)
	}
	check(p.plainHTTP(t), "dns-rebinding-protection")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
