package mcpserve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// moduleDetailsOf is get_module_details of acme/greeting/aws, held in an
// OCI layout and read without a proxy, by a server named hostname.
func moduleDetailsOf(t *testing.T, hostname string) string {
	t.Helper()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := seed.TestdataModule(t, "greeting")
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/acme/greeting/aws"})
	if err != nil {
		t.Fatal(err)
	}
	seed.Push(t, repo, seed.ModuleArtifact(t, b), "1.0.0")
	srv, closeSrv, err := newServer(Options{RegistryHostname: hostname,
		Registry: show.Options{Client: client, ModuleTemplate: "oci-layout:" + dir + "/${namespace}/${name}/${system}"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeSrv)
	ctx := context.Background()
	cs := connect(t, srv)
	id := "acme/greeting/aws"
	if hostname != "" {
		id = hostname + "/" + id
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_module_details", Arguments: map[string]any{"module_id": "localhost/acme/greeting/aws"}})
	if hostname != "" {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_module_details", Arguments: map[string]any{"module_id": id}})
	}
	if err != nil || res.IsError {
		t.Fatalf("get_module_details: %v %+v", err, res)
	}
	out, _ := json.Marshal(res.StructuredContent)
	return string(out)
}

// Without a proxy in front, no snippet names an address no proxy
// serves (localhost/…): a module in a layout has no usable source at
// all; with the proxy's hostname given, the snippet goes through it.
func TestDirectUsageNamesNoProxy(t *testing.T) {
	var direct struct {
		Address, Usage, Constraint string
	}
	out := moduleDetailsOf(t, "")
	if err := json.Unmarshal([]byte(out), &direct); err != nil {
		t.Fatal(err)
	}
	if direct.Usage != "" || direct.Constraint != "" || direct.Address != "" {
		t.Errorf("direct: %+v", direct)
	}
	through := moduleDetailsOf(t, "tofu.example.com")
	if !strings.Contains(through, `source  = \"tofu.example.com/acme/greeting/aws\"`) {
		t.Errorf("through tofu.example.com: %s", through)
	}
}
