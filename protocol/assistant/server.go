package assistant

import (
	"context"
	"encoding/json"
	"fmt"
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

// handler is a typed tool handler: its In is validated against the
// input schema before it is called.
type handler[In, Out any] func(ctx context.Context, in In) (Out, error)

// Value is any JSON value (a variable's default): its schema names each
// JSON type as a branch of its own, not the bare schema true that
// clients mapping tool schemas onto a single-type dialect reject.
type Value any

// valueSchema is Value's schema.
var valueSchema = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
	{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "array"}, {Type: "object"}, {Type: "null"},
}}

// schemaOf is the schema of a tool's In or Out.
func schemaOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Value](): valueSchema,
	}})
	if err != nil {
		panic("assistant: the schema of a tool: " + err.Error()) // a programming error, caught by every test
	}
	return s
}

// add adds the tool t answered by h. Its arguments are validated against
// the input schema, as the SDK's typed tools are; its answer is
// marshalled once, as the structured content and its text copy, and not
// validated again against the output schema on every call (a third of a
// warm call's CPU): the tests check every tool's answers against it.
func add[In, Out any](s *mcp.Server, t *mcp.Tool, h handler[In, Out]) {
	in := schemaOf[In]()
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic("assistant: the input schema of " + t.Name + ": " + err.Error())
	}
	t.InputSchema, t.OutputSchema = in, schemaOf[Out]()
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := arguments[In](req.Params.Arguments, resolved)
		if err != nil {
			return toolError(err), nil
		}
		out, err := h(ctx, args)
		if err != nil {
			return toolError(err), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling the answer of %s: %w", t.Name, err)
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
}

// arguments are a call's raw arguments validated against the input
// schema and read into an In.
func arguments[In any](raw json.RawMessage, resolved *jsonschema.Resolved) (In, error) {
	var in In
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return in, fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)
		}
	}
	if err := resolved.Validate(m); err != nil {
		return in, fmt.Errorf("validating \"arguments\": %w", err)
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// toolError is err as a tool's error result, as the MCP specification
// asks: the client (and the assistant) sees it, the call itself worked.
func toolError(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}
