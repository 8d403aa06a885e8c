package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	return out, "", false
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
		if isErr || got.Verdict != want || got.Installs == (want == "denied") {
			t.Errorf("verdict of %s: %+v %s, want %s", v, got, msg, want)
		}
	}
	if _, msg, isErr := callTool[details](t, cs, "get_module_details", map[string]any{"module_id": "example.com/nobody/vpc/aws"}); !isErr || !strings.Contains(msg, "") {
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
