// Package mcpclient is an MCP client for tests: a session with a
// Streamable HTTP endpoint (oci-tofu's /mcp) and tool calls decoded into
// the caller's types.
package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect opens a session with endpoint (https://HOST:PORT/mcp) over hc,
// closed when the test ends.
func Connect(t testing.TB, endpoint string, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "oci-tofu-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Call calls tool name with args and decodes its structured result into
// a T; isError reports a tool error, its text then in msg.
func Call[T any](t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (out T, msg string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return out, b.String(), true
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	return out, "", false
}

// MustCall is Call for a call that must succeed.
func MustCall[T any](t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) T {
	t.Helper()
	out, msg, isError := Call[T](t, cs, name, args)
	if isError {
		t.Fatalf("%s %v: tool error: %s", name, args, msg)
	}
	return out
}
