package assistant

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name and the instructions an assistant is given with the tools.
const (
	Name         = "oci-tofu"
	instructions = "Tools over the modules and providers this organisation holds in its OCI registry, " +
		"as its oci-tofu proxy serves them. Before writing a module block, call search_modules, then " +
		"get_module_details for its inputs and a usage snippet; before pinning a version, call " +
		"get_policy_verdict: a denied or revoked version will not install. Every answer is limited " +
		"to what the caller may read."
)

// NewServer is the MCP server of the tools over cat, reporting version
// as its own.
func NewServer(cat Catalogue, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "oci-tofu catalogue", Version: version},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{cat: cat}
	addModuleTools(s, t)
	addProviderTools(s, t)
	addPolicyTools(s, t)
	return s
}

// tools answer the tool calls from the catalogue.
type tools struct{ cat Catalogue }

// readOnly is a tool that reads the catalogue only: it changes nothing,
// asks the same of the same, and reaches only the proxy's registry.
func readOnly(name, title, description string) *mcp.Tool {
	f := false
	return &mcp.Tool{Name: name, Title: title, Description: description,
		Annotations: &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f}}
}

// handler is a typed tool handler: the SDK validates In against the
// input schema before it is called, and Out against the output schema.
type handler[In, Out any] func(ctx context.Context, in In) (Out, error)

// add adds the tool t answered by h.
func add[In, Out any](s *mcp.Server, t *mcp.Tool, h handler[In, Out]) {
	mcp.AddTool(s, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := h(ctx, in)
		return nil, out, err
	})
}
