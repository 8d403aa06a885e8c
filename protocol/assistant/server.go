package assistant

import (
	"context"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

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

// Options shape the server.
type Options struct {
	// Version is reported as the server's.
	Version string
	// Direct says no proxy serves the catalogue's addresses to the
	// caller's tofu (oci-tofu mcp reading the registry itself): a
	// module's usage is then its oci:// source, and its address the
	// repository's.
	Direct bool
}

// NewServer is the MCP server of the tools over cat.
func NewServer(cat Catalogue, opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "oci-tofu catalogue", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{cat: cat, direct: opts.Direct}
	addModuleTools(s, t)
	addProviderTools(s, t)
	addPolicyTools(s, t)
	return s
}

// tools answer the tool calls from the catalogue (direct: Options.Direct).
type tools struct {
	cat    Catalogue
	direct bool
}

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

// Value is any JSON value (a variable's default): its schema names each
// JSON type as a branch of its own, not the bare schema true that
// clients mapping tool schemas onto a single-type dialect reject.
type Value any

// valueSchema is Value's schema.
var valueSchema = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
	{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "array"}, {Type: "object"}, {Type: "null"},
}}

// schemaOf is the schema of a tool's Out.
func schemaOf[Out any]() *jsonschema.Schema {
	s, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Value](): valueSchema,
	}})
	if err != nil {
		panic("assistant: the output schema of a tool: " + err.Error()) // a programming error, caught by every test
	}
	return s
}

// add adds the tool t answered by h.
func add[In, Out any](s *mcp.Server, t *mcp.Tool, h handler[In, Out]) {
	t.OutputSchema = schemaOf[Out]()
	mcp.AddTool(s, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := h(ctx, in)
		return nil, out, err
	})
}
