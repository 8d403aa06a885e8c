package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// mcpSession is an MCP client session with p's /mcp, sending header.
func mcpSession(t *testing.T, p *proxy, header map[string]string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{base: p.Client.Transport, header: header}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: p.URL + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type headerTransport struct {
	base   http.RoundTripper
	header map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// callTool calls name with args and decodes its structured result into
// a T; isError reports a tool error (its text then in msg).
func callTool[T any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (out T, msg string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg += tc.Text
			}
		}
		return out, msg, true
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	checkOutputSchema(t, cs, name, b)
	return out, "", false
}

// outputSchemas are the resolved output schemas of each session's tools.
var outputSchemas sync.Map // *mcp.ClientSession → map[string]*jsonschema.Resolved

// checkOutputSchema fails the test unless answer (the structured content
// of tool name) is valid against the output schema the session lists:
// the server does not check its answers on every call.
func checkOutputSchema(t *testing.T, cs *mcp.ClientSession, name string, answer []byte) {
	t.Helper()
	schemas, ok := outputSchemas.Load(cs)
	if !ok {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		m := map[string]*jsonschema.Resolved{}
		for _, tl := range res.Tools {
			b, _ := json.Marshal(tl.OutputSchema)
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("%s's output schema: %v", tl.Name, err)
			}
			r, err := s.Resolve(nil)
			if err != nil {
				t.Fatalf("%s's output schema: %v", tl.Name, err)
			}
			m[tl.Name] = r
		}
		schemas, _ = outputSchemas.LoadOrStore(cs, m)
	}
	r := schemas.(map[string]*jsonschema.Resolved)[name]
	var v any
	if err := json.Unmarshal(answer, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r == nil {
		t.Fatalf("%s: no output schema listed", name)
	}
	if err := r.Validate(v); err != nil {
		t.Errorf("%s's answer does not match its output schema: %v\n%.500s", name, err, answer)
	}
}

// The module tools answer what the catalogue's JSON says.
func TestAssistantModuleTools(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	cs := mcpSession(t, p, nil)
	type hit struct {
		ModuleID string `json:"module_id"`
		Latest   string `json:"latest"`
	}
	found, msg, isErr := callTool[struct{ Modules []hit }](t, cs, "search_modules", map[string]any{"module_query": "cidr"})
	if isErr || len(found.Modules) != 1 || found.Modules[0].ModuleID != "example.com/acme/vpc/aws" || found.Modules[0].Latest != "1.1.0" {
		t.Fatalf("search_modules cidr: %+v %s", found, msg)
	}
	type details struct {
		ModuleID string                `json:"module_id"`
		Usage    string                `json:"usage"`
		Status   catalog.VersionStatus `json:"status"`
		Inputs   []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		} `json:"inputs"`
	}
	d, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/acme/vpc/aws"})
	page, _ := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws", nil)
	if isErr || d.ModuleID != "example.com/acme/vpc/aws/1.1.0" || d.Usage != page.Usage.Registry || d.Status.Status != catalog.StatusDeprecated {
		t.Fatalf("get_module_details: %+v %s\npage usage %q", d, msg, page.Usage.Registry)
	}
	if len(d.Inputs) != len(page.Module.Inputs) || d.Inputs[0].Name != "cidr" || !d.Inputs[0].Required {
		t.Errorf("inputs %+v", d.Inputs)
	}
	type verdict struct {
		Verdict  string `json:"verdict"`
		Installs bool   `json:"installs"`
		Rule     string `json:"rule"`
	}
	for v, want := range map[string]string{"2.0.0": "denied", "1.1.0": "deprecated", "1.0.0": "allowed"} {
		got, msg, isErr := callTool[verdict](t, cs, "get_policy_verdict", map[string]any{"address": "example.com/acme/vpc/aws", "version": v})
		if isErr || got.Verdict != want || got.Installs == (want == "denied") || got.Rule == "" {
			t.Errorf("verdict of %s: %+v %s, want %s by a named rule", v, got, msg, want)
		}
	}
	if _, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/nobody/vpc/aws"}); !isErr || !strings.Contains(msg, "nobody/vpc/aws") {
		t.Errorf("unknown module: %q", msg)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("%s is not annotated read-only", tl.Name)
		}
	}
	if !slices.Contains(names, "get_lock_blocks") {
		t.Errorf("tools %v", names)
	}
}

// The provider tools answer what the provider's catalogue page says:
// details, the policy's verdict, vulnerabilities, usage and lock blocks.
func TestAssistantProviderTools(t *testing.T) {
	p := startFactsCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	downloadHello(t, p, "1.0.0", nil)
	cs := mcpSession(t, p, nil)
	hello := map[string]any{"namespace": "test", "name": "hello", "host": "example.com"}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range hello {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	page, _ := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0", nil)
	type details struct {
		Version   string                  `json:"version"`
		Platforms []string                `json:"platforms"`
		Signer    catalog.Signer          `json:"signer"`
		Versions  []catalog.VersionStatus `json:"versions"`
		Usage     string                  `json:"usage"`
	}
	d, msg, isErr := callTool[details](t, cs, "get_provider_details", with(map[string]any{"version": "1.0.0"}))
	if isErr || d.Version != "1.0.0" || !slices.Equal(d.Platforms, page.Platforms) || !slices.Equal(d.Signer.KeyIDs, page.Signer.KeyIDs) ||
		len(d.Versions) != 3 || d.Usage != page.Usage {
		t.Errorf("get_provider_details: %+v %s", d, msg)
	}
	latest, msg, isErr := callTool[struct{ Version string }](t, cs, "get_latest_provider_version", hello)
	if isErr || latest.Version != "1.1.0" {
		t.Errorf("latest: %+v %s (2.0.0-rc1 is revoked)", latest, msg)
	}
	type verdict struct {
		Verdict, Rule, Message string
		Installs               bool
	}
	for v, want := range map[string]string{"1.0.0": "warned", "1.1.0": "allowed", "2.0.0-rc1": "revoked"} {
		got, msg, isErr := callTool[verdict](t, cs, "get_policy_verdict", map[string]any{"address": "example.com/test/hello", "version": v})
		if isErr || got.Verdict != want || got.Rule != "hello" || got.Installs == (want == "revoked") {
			t.Errorf("verdict of %s: %+v %s, want %s", v, got, msg, want)
		}
	}
	vulns, msg, isErr := callTool[struct{ Vulnerabilities []catalog.Vulnerability }](t, cs, "get_vulnerabilities", with(map[string]any{"version": "1.0.0"}))
	if isErr || len(vulns.Vulnerabilities) != len(page.SBOMs.Vulnerabilities) || vulns.Vulnerabilities[0].ID != page.SBOMs.Vulnerabilities[0].ID {
		t.Errorf("get_vulnerabilities: %+v %s", vulns, msg)
	}
	usage, msg, isErr := callTool[struct{ Counts catalog.UsageCounts }](t, cs, "get_version_usage", hello)
	if isErr || usage.Counts.Week != 1 || usage.Counts.Clients != 1 || usage.Counts.Version != nil {
		t.Errorf("get_version_usage: %+v %s", usage, msg)
	}
	for v, want := range map[string]uint64{"1.0.0": 1, "1.1.0": 0} {
		usage, msg, isErr = callTool[struct{ Counts catalog.UsageCounts }](t, cs, "get_version_usage", with(map[string]any{"version": v}))
		if isErr || usage.Counts.Week != 1 || usage.Counts.Version == nil || usage.Counts.Version.Version != v || usage.Counts.Version.Week != want || usage.Counts.Version.Clients != int(want) {
			t.Errorf("get_version_usage of %s: %+v %s", v, usage, msg)
		}
	}
	locked, _ := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/test/hello/1.0.0?platform=linux_amd64", nil)
	lock, msg, isErr := callTool[struct{ Lock string }](t, cs, "get_lock_blocks", map[string]any{
		"providers": []map[string]any{with(map[string]any{"version": "1.0.0"})}, "platforms": []string{"linux_amd64"}})
	if isErr || lock.Lock != locked.Lock || !strings.Contains(lock.Lock, "zh:") {
		t.Errorf("get_lock_blocks: %q %s\nwant %q", lock.Lock, msg, locked.Lock)
	}
}

// Two clients, one proxy: neither finds, reads or is told of the other's
// modules through any tool, after the other warmed every cache; a
// module out of scope is refused as one that does not exist.
func TestAssistantScopes(t *testing.T) {
	const tokenA, tokenO = "token-of-acme", "token-of-others"
	p := startSearchCatalog(t, fmt.Sprintf(`
client "acme" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
}
client "others" {
  tokens  = [%q]
  modules = ["*/others/*/*"]
}
`, policy.TokenHash(tokenA), policy.TokenHash(tokenO)), Options{AuthTokens: []string{"operator-token"}, MCP: &MCP{Loopback: true}})
	calls := func(ns string) map[string]map[string]any {
		id := "example.com/" + ns + "/" + map[string]string{"acme": "vpc", "others": "notes"}[ns] + "/aws"
		return map[string]map[string]any{
			"search_modules":            {"module_query": "vpc"},
			"get_module_details":        {"module_id": id},
			"get_latest_module_version": {"module_publisher": ns, "module_name": map[string]string{"acme": "vpc", "others": "notes"}[ns], "module_provider": "aws", "host": "example.com"},
			"get_policy_verdict":        {"address": id, "version": "0.1.0"},
		}
	}
	sessions := map[string]*mcp.ClientSession{
		"acme":   mcpSession(t, p, map[string]string{"Authorization": "Bearer " + tokenA}),
		"others": mcpSession(t, p, map[string]string{"Authorization": "Bearer " + tokenO}),
	}
	for own, other := range map[string]string{"acme": "others", "others": "acme"} {
		for name, args := range calls(other) { // the other warms every cache
			callTool[map[string]any](t, sessions[other], name, args)
		}
		for name, args := range calls(other) {
			res, msg, isErr := callTool[map[string]any](t, sessions[own], name, args)
			b, _ := json.Marshal(res)
			if strings.Contains(string(b), other+"/") {
				t.Errorf("%s's %s of %s's names it: %s %s", own, name, other, b, msg)
			}
			if name != "search_modules" && !isErr {
				t.Errorf("%s's %s of %s's module answered: %s", own, name, other, b)
			}
		}
		_, missing, _ := callTool[map[string]any](t, sessions[own], "get_module_details", map[string]any{"module_id": "example.com/" + other + "/nothing/aws"})
		_, hidden, _ := callTool[map[string]any](t, sessions[own], "get_module_details", calls(other)["get_module_details"])
		if strings.ReplaceAll(hidden, map[string]string{"acme": "vpc", "others": "notes"}[other], "nothing") != missing {
			t.Errorf("%s is told of %s's module otherwise than of none:\n%s\n%s", own, other, hidden, missing)
		}
		found, _, _ := callTool[struct {
			Modules []struct {
				ModuleID string `json:"module_id"`
			}
		}](t, sessions[own], "search_modules", map[string]any{})
		for _, m := range found.Modules {
			if !strings.Contains(m.ModuleID, "/"+own+"/") {
				t.Errorf("%s finds %s", own, m.ModuleID)
			}
		}
		if len(found.Modules) == 0 {
			t.Errorf("%s finds nothing of its own", own)
		}
	}
}

// Hostile requests get a clear refusal and change nothing: a body over
// the bound, a foreign Origin, an unknown tool, wrong types, an
// argument the schema does not name, an address far too long.
func TestAssistantHostileInput(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true, Origins: []string{"https://assistant.example"}}})
	post := func(body string, header map[string]string) response {
		h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
		for k, v := range header {
			h[k] = v
		}
		req, err := http.NewRequest(http.MethodPost, p.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := p.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{Status: resp.StatusCode, Body: b}
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_modules","arguments":{"module_query":"vpc"}}}`
	if r := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_modules","arguments":{"module_query":"`+strings.Repeat("x", 1<<20)+`"}}}`, nil); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB of arguments: %d %s", r.Status, r.Body)
	}
	if r := post(call, map[string]string{"Origin": "https://evil.example"}); r.Status != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d %s", r.Status, r.Body)
	}
	if r := post(call, map[string]string{"Origin": "https://assistant.example"}); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "vpc") {
		t.Errorf("an allowed Origin: %d %s", r.Status, r.Body)
	}
	cs := mcpSession(t, p, nil)
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"get_module_details", map[string]any{"module_id": 42}, "module_id"},
		{"get_module_details", map[string]any{"module_id": "example.com/acme/vpc/aws", "extra": true}, "extra"},
		{"get_module_details", map[string]any{"module_id": strings.Repeat("a/", 400)}, "longer than"},
		{"get_module_details", map[string]any{"module_id": "a/b"}, "want [HOST/]NAMESPACE/NAME/SYSTEM"},
		{"get_policy_verdict", map[string]any{"address": "example.com/acme/vpc/aws", "version": "not-a-version"}, "version"},
		{"get_lock_blocks", map[string]any{"providers": slices.Repeat([]map[string]any{{"namespace": "test", "name": "hello", "version": "1.0.0"}}, 21)}, "want 1 to 20"},
		{"search_modules", map[string]any{"page": 1 << 30}, "page"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		msg := ""
		if err != nil {
			msg = err.Error()
		} else if res.IsError {
			for _, ct := range res.Content {
				if tc, ok := ct.(*mcp.TextContent); ok {
					msg += tc.Text
				}
			}
		}
		if msg == "" || !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q, want an error naming %q", c.name, c.args, msg, c.want)
		}
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_everything"}); err == nil || !strings.Contains(err.Error(), "delete_everything") {
		t.Errorf("an unknown tool: %v", err)
	}
}

// Off loopback, the endpoint needs the proxy's TLS and client
// authentication.
func TestAssistantExposureRefused(t *testing.T) {
	for _, m := range []*MCP{{}, {PlainHTTP: true}} {
		_, err := New(Options{MCP: m, ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+t.TempDir()+"/${namespace}/${name}/${system}")}})
		if err == nil || !strings.Contains(err.Error(), "--mcp on an address other than loopback") {
			t.Errorf("%+v: %v", m, err)
		}
	}
}

// A verdict is read from the module's own page, which lists every
// version's status, however the address is written: HashiCorp's
// NAMESPACE/NAME/SYSTEM/VERSION form names a version whose own page
// (denied) the catalogue refuses.
func TestAssistantVerdictOfAVersionedAddress(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	cs := mcpSession(t, p, nil)
	type verdict struct {
		Verdict string `json:"verdict"`
		Rule    string `json:"rule"`
	}
	for address, want := range map[string]string{
		"example.com/acme/vpc/aws/2.0.0": "denied",
		"example.com/acme/vpc/aws/1.1.0": "deprecated",
	} {
		_, version, _ := strings.Cut(strings.TrimPrefix(address, "example.com/acme/vpc/aws"), "/")
		got, msg, isErr := callTool[verdict](t, cs, "get_policy_verdict", map[string]any{"address": address, "version": version})
		if isErr || got.Verdict != want {
			t.Errorf("verdict of %s: %+v %s, want %s", address, got, msg, want)
		}
	}
	_, msg, isErr := callTool[verdict](t, cs, "get_policy_verdict", map[string]any{"address": "example.com/acme/vpc/aws/2.0.0", "version": "1.0.0"})
	if !isErr || !strings.Contains(msg, "names version 2.0.0") {
		t.Errorf("two versions: %q", msg)
	}
}

// Without a kind, a module address without a host (NAMESPACE/NAME/SYSTEM,
// as search results and prompts write it) is a module's, not read as a
// provider's HOST/NAMESPACE/TYPE: "acme" is no host name.
func TestAssistantVerdictOfAModuleWithoutHost(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	cs := mcpSession(t, p, nil)
	got, msg, isErr := callTool[struct {
		Kind, Verdict string
	}](t, cs, "get_policy_verdict", map[string]any{"address": "acme/vpc/aws", "version": "1.1.0"})
	if isErr || got.Kind != "module" || got.Verdict != "deprecated" {
		t.Errorf("verdict of acme/vpc/aws 1.1.0: %+v %s, want a module's, deprecated", got, msg)
	}
}

// A submodule or an example is shown as MODULE_ID//modules/NAME, as a
// module source names it, at the newest version or the one asked.
func TestAssistantModuleDirectories(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	cs := mcpSession(t, p, nil)
	type details struct {
		ModuleID   string   `json:"module_id"`
		Usage      string   `json:"usage"`
		Submodules []string `json:"submodules"`
		Page       string   `json:"page"`
		Inputs     []struct {
			Name string `json:"name"`
		} `json:"inputs"`
	}
	root, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/acme/vpc/aws"})
	if isErr || !slices.Equal(root.Submodules, []string{"modules/subnets"}) {
		t.Fatalf("root: %+v %s", root, msg)
	}
	sub, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/acme/vpc/aws//" + root.Submodules[0]})
	page, _ := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/acme/vpc/aws/1.1.0/modules/subnets", nil)
	if isErr || sub.ModuleID != "example.com/acme/vpc/aws/1.1.0//modules/subnets" || len(sub.Inputs) != 1 || sub.Inputs[0].Name != "vpc_id" ||
		sub.Usage != page.Usage.Registry || !strings.Contains(sub.Usage, "//modules/subnets") || sub.Page != "/catalog/modules/example.com/acme/vpc/aws/1.1.0/modules/subnets" {
		t.Errorf("submodule: %+v %s\npage usage %q", sub, msg, page.Usage.Registry)
	}
	ex, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/acme/vpc/aws/1.0.0//examples/simple"})
	if isErr || ex.ModuleID != "example.com/acme/vpc/aws/1.0.0//examples/simple" || ex.Usage != "" {
		t.Errorf("example: %+v %s", ex, msg)
	}
	for _, bad := range []string{"//modules/../x", "//foo/bar", "//modules/a/b", "//modules/", "//modules/a%2f..", "//modules/none"} {
		_, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/acme/vpc/aws" + bad})
		if !isErr || msg == "" {
			t.Errorf("%s: answered", bad)
		}
	}
}
