package mcpserve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// Reading the registry itself, a template whose registry is the
// address's host (${hostname}/…) would let an assistant choose the host
// the user's registry credentials (--username: sent to every registry)
// go to: mcp refuses such a template, and no tool reaches a host an
// argument names.
func TestDirectCredentialsStayOnTheTemplatesRegistry(t *testing.T) {
	registries := &network{}
	client, err := oci.NewClient(oci.Options{Transport: registries, Username: "me", Password: "s3cret-Pa55"})
	if err != nil {
		t.Fatal(err)
	}
	host := "attacker.example"
	for _, opts := range []show.Options{
		{Client: client, ModuleTemplate: "${hostname}/modules/${namespace}/${name}/${system}"},
		{Client: client, ProviderTemplate: "${hostname}/providers/${namespace}/${type}"},
		{Client: client, ModuleTemplate: "reg-${namespace}.example/modules/${name}/${system}"},
		{Client: client, ModuleTemplate: "registry.example/modules/${hostname}/${namespace}/${name}/${system}"},
	} {
		srv, closeSrv, err := newServer(Options{Registry: opts})
		fixed := strings.HasPrefix(opts.ModuleTemplate, "registry.example/")
		if err != nil {
			if fixed || !strings.Contains(err.Error(), "placeholder") {
				t.Errorf("%+v: %v", opts, err)
			}
			continue
		}
		if !fixed {
			t.Errorf("%+v is not refused", opts)
		}
		ctx := context.Background()
		cs := connect(t, srv)
		for name, args := range map[string]map[string]any{
			"get_module_details":   {"module_id": host + "/acme/vpc/aws"},
			"get_provider_details": {"namespace": "acme", "name": "x", "host": host},
		} {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		cs.Close()
		closeSrv()
	}
	seen := registries.requests()
	for _, s := range seen {
		if !strings.HasPrefix(s, "registry.example/") {
			t.Errorf("a host an argument named was asked: %s", s)
		}
	}
	if len(seen) == 0 {
		t.Errorf("the template's registry was not asked: the test sees nothing")
	}
}

// network stands for every host: it records each request (host, path,
// Authorization) and asks for Basic credentials, as a registry would.
type network struct {
	mu   sync.Mutex
	seen []string
}

func (n *network) RoundTrip(r *http.Request) (*http.Response, error) {
	n.mu.Lock()
	n.seen = append(n.seen, r.URL.Host+r.URL.Path+" "+r.Header.Get("Authorization"))
	n.mu.Unlock()
	h := http.Header{}
	h.Set("WWW-Authenticate", `Basic realm="registry"`)
	return &http.Response{StatusCode: http.StatusUnauthorized, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

func (n *network) requests() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.seen...)
}
