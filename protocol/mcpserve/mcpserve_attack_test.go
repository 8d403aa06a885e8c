package mcpserve

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The token reaches the proxy only: not a host a redirect names (a
// trusted one included), nor a host a module_id or provider names.
func TestRemoteTokenGoesToTheProxyOnly(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.URL.String()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	defer other.Close()
	var asked []string
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer secret-token" {
			t.Errorf("the proxy was sent %q", r.Header.Get("Authorization"))
		}
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer proxy.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, closeSrv, err := newServer(Options{Proxy: proxy.URL, Token: "secret-token", CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrv()
	ctx := context.Background()
	cs := connect(t, srv)
	host := strings.TrimPrefix(other.URL, "https://")
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"get_module_details", map[string]any{"module_id": host + "/acme/vpc/aws"}},
		{"get_provider_details", map[string]any{"namespace": "hashicorp", "name": "aws", "host": host}},
		{"search_modules", map[string]any{"module_query": "vpc"}},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil || !res.IsError {
			t.Errorf("%s through a redirecting proxy: %v %+v", c.name, err, res)
		}
	}
	if len(elsewhere) > 0 || len(asked) != 3 {
		t.Errorf("asked elsewhere: %q; the proxy was asked %q", elsewhere, asked)
	}
}

// A token that is no valid header value is refused without being
// quoted: no tool error (which the assistant reads) holds any of it.
func TestRemoteTokenNotInErrors(t *testing.T) {
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the proxy was asked with %q", r.Header.Get("Authorization"))
	}))
	defer proxy.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "secret-part\r\nX-Injected: secret-tail"
	srv, closeSrv, err := newServer(Options{Proxy: proxy.URL, Token: token, CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrv()
	ctx := context.Background()
	cs := connect(t, srv)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_modules", Arguments: map[string]any{"module_query": "vpc"}})
	if err != nil || !res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "secret") {
		t.Errorf("the error quotes the token: %s", text)
	}
}
