package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// postMCP is the answer of p's /mcp to a POST of body with header.
func postMCP(t *testing.T, p *proxy, method, body string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, p.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// toolCall is the JSON-RPC message calling name with args (JSON).
func toolCall(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

// A JSON-RPC batch is refused: one POST is one exchange, so a client's
// request budget (spent once per HTTP request) bounds its tool calls,
// and an array of hundreds of calls in 64 KiB does not multiply them.
func TestAssistantAttackBatchRefused(t *testing.T) {
	const token = "token-of-acme"
	p := startCatalog(t, fmt.Sprintf(`
client "acme" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
  rate    = 0.001
  burst   = 8
}
`, policy.TokenHash(token)), Options{AuthTokens: []string{"operator-token"}, MCP: &MCP{Loopback: true}})
	auth := map[string]string{"Authorization": "Bearer " + token}
	var calls []string
	for i := range 50 {
		calls = append(calls, toolCall(i+1, "search_modules", `{"module_query":"vpc"}`))
	}
	r := postMCP(t, p, http.MethodPost, "["+strings.Join(calls, ",")+"]", auth)
	if r.Status != http.StatusBadRequest {
		t.Errorf("a batch of 50 tool calls in one request: %d, %d answers", r.Status, strings.Count(string(r.Body), `"jsonrpc"`))
	}
	for _, lead := range []string{" \n\t", "\r\n", "\ufeff", "\f", "\x00"} {
		if r := postMCP(t, p, http.MethodPost, lead+"[ "+calls[0]+"]", auth); r.Status == http.StatusOK {
			t.Errorf("a batch after %q: %d %s", lead, r.Status, r.Body)
		}
	}
	if r := postMCP(t, p, http.MethodPost, calls[0], auth); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "vpc") {
		t.Errorf("one call: %d %s", r.Status, r.Body)
	}
}

// The endpoint answers POST only, keeps no session a later request
// could name, and refuses a page served from another origin however the
// Origin or Host is spelt (a rebound DNS name included).
func TestAssistantAttackOriginsAndMethods(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true, Origins: []string{"https://assistant.example"}}})
	call := toolCall(1, "search_modules", `{"module_query":"vpc"}`)
	u, _ := url.Parse(p.URL)
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"null origin", map[string]string{"Origin": "null"}},
		{"own origin with a path", map[string]string{"Origin": p.URL + "/"}},
		{"own host, other scheme", map[string]string{"Origin": "http://" + u.Host}},
		{"allowed origin with a slash", map[string]string{"Origin": "https://assistant.example/"}},
		{"allowed origin, other port", map[string]string{"Origin": "https://assistant.example:8443"}},
		{"allowed origin, user", map[string]string{"Origin": "https://x@assistant.example"}},
		{"rebound name", map[string]string{"Origin": "https://evil.example:" + u.Port(), "Host": "evil.example:" + u.Port()}},
		{"rebound name, no origin", map[string]string{"Host": "evil.example:" + u.Port()}},
	} {
		if r := postMCP(t, p, http.MethodPost, call, c.header); r.Status != http.StatusForbidden {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		if r := postMCP(t, p, m, call, nil); r.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d %s", m, r.Status, r.Body)
		}
	}
	r := postMCP(t, p, http.MethodPost, call, map[string]string{"Mcp-Session-Id": "made-up"})
	if r.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a stateless exchange names a session: %q", r.Header.Get("Mcp-Session-Id"))
	}
}

// A client scoped away from a provider is told of it by no provider
// tool, in words, counts or hits, after a client reading it warmed every
// cache, and is refused as for a provider that does not exist; the
// usage counts are refused to a scoped client reading the provider too.
func TestAssistantAttackProviderScopes(t *testing.T) {
	const tokenIn, tokenOut = "token-reading-hello", "token-reading-others"
	p := startFactsCatalog(t, fmt.Sprintf(`
client "in" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
}
client "out" {
  tokens    = [%q]
  providers = ["example.com/others/*"]
  modules   = ["*/*/*/*"]
}
`, policy.TokenHash(tokenIn), policy.TokenHash(tokenOut)), Options{AuthTokens: []string{"operator-token"}, MCP: &MCP{Loopback: true}})
	downloadHello(t, p, "1.0.0", map[string]string{"Authorization": "Bearer " + tokenIn})
	in := mcpSession(t, p, map[string]string{"Authorization": "Bearer " + tokenIn})
	out := mcpSession(t, p, map[string]string{"Authorization": "Bearer " + tokenOut})
	calls := func(name string) map[string]map[string]any {
		pr := map[string]any{"namespace": "test", "name": name, "host": "example.com", "version": "1.0.0"}
		return map[string]map[string]any{
			"search_providers":            {"provider_query": "hello"},
			"get_provider_details":        pr,
			"get_latest_provider_version": {"namespace": "test", "name": name, "host": "example.com"},
			"get_vulnerabilities":         pr,
			"get_version_usage":           {"namespace": "test", "name": name, "host": "example.com"},
			"get_lock_blocks":             {"providers": []map[string]any{pr}, "platforms": []string{"linux_amd64"}},
			"get_policy_verdict":          {"address": "example.com/test/" + name, "version": "1.0.0"},
			"search_modules":              {"provider": "example.com/test/" + name},
		}
	}
	for name, args := range calls("hello") {
		if _, msg, isErr := callTool[map[string]any](t, in, name, args); isErr && name != "get_version_usage" {
			t.Errorf("in's %s of hello: %s", name, msg)
		}
	}
	for name, args := range calls("hello") {
		res, msg, isErr := callTool[map[string]any](t, out, name, args)
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), "test/hello") || strings.Contains(string(b), `"total":1`) {
			t.Errorf("out's %s names or counts hello: %s", name, b)
		}
		if strings.HasPrefix(name, "search_") {
			continue
		}
		_, missing, _ := callTool[map[string]any](t, out, name, calls("nothing")[name])
		if !isErr || strings.ReplaceAll(msg, "hello", "nothing") != missing {
			t.Errorf("out's %s of hello is told otherwise than of none:\n%s %s\n%s", name, b, msg, missing)
		}
	}
	if usage, msg, isErr := callTool[map[string]any](t, in, "get_version_usage", calls("hello")["get_version_usage"]); !isErr {
		t.Errorf("a scoped client reads the usage counts: %v %s", usage, msg)
	}
}

// A tool call reading many catalogue documents spends the caller's
// request budget for each beyond the first, as reading them from the
// catalogue would: get_lock_blocks of 20 providers is not 20 page builds
// for one request of the budget.
func TestAssistantAttackLockSpendsTheBudget(t *testing.T) {
	const token = "token-of-ci"
	p := startFactsCatalog(t, fmt.Sprintf(`
client "ci" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
  rate      = 0.001
  burst     = 4
}
`, policy.TokenHash(token)), Options{AuthTokens: []string{"operator-token"}, MCP: &MCP{Loopback: true}})
	cs := mcpSession(t, p, map[string]string{"Authorization": "Bearer " + token})
	hello := map[string]any{"namespace": "test", "name": "hello", "host": "example.com", "version": "1.0.0"}
	args := map[string]any{"providers": []map[string]any{hello, hello, hello, hello, hello, hello, hello, hello}, "platforms": []string{"linux_amd64"}}
	lock, msg, isErr := callTool[struct{ Blocks []any }](t, cs, "get_lock_blocks", args)
	if !isErr || !strings.Contains(msg, "request budget") {
		t.Errorf("8 lock blocks on a budget of 4 requests: %d blocks %s", len(lock.Blocks), msg)
	}
}

// A request sent with another Host does not poison what the tools tell
// the next caller: usage snippets name the host each caller asked.
func TestAssistantAttackHostPoisoning(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	u, _ := url.Parse(p.URL)
	for _, path := range []string{"/catalog/modules/example.com/acme/vpc/aws", "/catalog/modules/example.com/acme/vpc/aws/1.1.0", "/catalog/?q=vpc"} {
		req, _ := http.NewRequest(http.MethodGet, p.URL+path+"?format=json", nil)
		if strings.Contains(path, "?") {
			req, _ = http.NewRequest(http.MethodGet, p.URL+path+"&format=json", nil)
		}
		req.Host = "evil.example:" + u.Port()
		req.Header.Set("Accept", "application/json")
		resp, err := p.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s as evil.example: %d", path, resp.StatusCode)
		}
	}
	cs := mcpSession(t, p, nil)
	for name, args := range map[string]map[string]any{
		"get_module_details": {"module_id": "example.com/acme/vpc/aws"},
		"search_modules":     {"module_query": "vpc"},
	} {
		res, msg, _ := callTool[map[string]any](t, cs, name, args)
		if b, _ := json.Marshal(res); strings.Contains(string(b)+msg, "evil.example") {
			t.Errorf("%s after a request to evil.example: %s %s", name, b, msg)
		}
	}
}

// Field-smuggling arguments (a slash in a namespace, an empty part, a
// module without documented inputs) get an answer or a tool error, never
// a panic or a protocol error.
func TestAssistantAttackOddArguments(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	cs := mcpSession(t, p, nil)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"get_module_details", map[string]any{"module_id": "example.com/others/dns/aws"}},
		{"get_module_details", map[string]any{"module_id": "others/dns/aws", "version": "latest"}},
		{"get_latest_module_version", map[string]any{"module_publisher": "acme/vpc", "module_name": "aws", "module_provider": ""}},
		{"get_latest_module_version", map[string]any{"module_publisher": "", "module_name": "", "module_provider": "", "host": "/"}},
		{"get_provider_details", map[string]any{"namespace": "", "name": "example.com/test/hello"}},
		{"get_provider_details", map[string]any{"namespace": "test/hello", "name": "x", "host": "example.com"}},
		{"get_lock_blocks", map[string]any{"providers": []map[string]any{{"namespace": "test", "name": "hello", "version": "1.0.0", "host": "example.com"}}, "platforms": []string{"../linux_amd64", "linux_amd64?x", ""}}},
		{"get_policy_verdict", map[string]any{"address": "example.com/others/dns/aws", "version": "0.3.0", "kind": "provider"}},
		{"get_policy_verdict", map[string]any{"address": "", "version": "1.0.0"}},
		{"search_modules", map[string]any{"provider": "../x", "namespace": "a/b", "status": "x&kind=provider", "page": 10000}},
		{"search_providers", map[string]any{"provider_query": "\x00\n\u202e", "page": 10000}},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Errorf("%s %v: %v", c.name, c.args, err)
			continue
		}
		if b, _ := json.Marshal(res); strings.Contains(string(b), "panic") {
			t.Errorf("%s %v: %s", c.name, c.args, b)
		}
	}
	d, msg, isErr := callTool[struct {
		Version string `json:"version"`
		Inputs  []any  `json:"inputs"`
	}](t, cs, "get_module_details", map[string]any{"module_id": "example.com/others/dns/aws"})
	if isErr || d.Version != "0.3.0" || d.Inputs == nil {
		t.Errorf("a module without inputs: %+v %s", d, msg)
	}
}
