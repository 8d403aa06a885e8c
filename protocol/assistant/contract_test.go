package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/protocol/assistant"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.json from the tools served")

// contract is the committed tool catalogue: what assistants and prompts
// are written against.
const contract = "testdata/tools.json"

// nothing is a catalogue that holds nothing.
type nothing struct{}

func (nothing) Get(context.Context, string, url.Values, any) error {
	return &assistant.Refusal{Status: 404, Message: "nothing is held"}
}
func (nothing) OwnHost(context.Context) (string, error) { return "proxy.example", nil }

// session is a client session with the tools over cat, in memory.
func session(t *testing.T, cat assistant.Catalogue) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := assistant.NewServer(cat, assistant.Options{Version: "test"}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "contract", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// The tools served (names, titles, descriptions, annotations, input and
// output schemas) are the committed contract: a change to any of them
// fails here until testdata/tools.json is rewritten with -update and
// the change reviewed as the API change it is.
func TestToolsAreTheContract(t *testing.T) {
	res, err := session(t, nothing{}).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(contract, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the tools served differ from %s (go test ./protocol/assistant -run Contract -update rewrites it):\n%s", contract, firstDifference(string(want), string(got)))
	}
	for _, tl := range res.Tools {
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint || tl.Annotations.OpenWorldHint == nil || *tl.Annotations.OpenWorldHint {
			t.Errorf("%s is not annotated read-only and closed-world: %+v", tl.Name, tl.Annotations)
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s has no output schema", tl.Name)
		}
		for _, path := range bareSchemas(tl.InputSchema, "inputSchema") {
			t.Errorf("%s: %s is a bare boolean, not a schema object (clients mapping tool schemas to a single-type dialect reject it)", tl.Name, path)
		}
		for _, path := range bareSchemas(tl.OutputSchema, "outputSchema") {
			t.Errorf("%s: %s is a bare boolean, not a schema object (clients mapping tool schemas to a single-type dialect reject it)", tl.Name, path)
		}
	}
}

// bareSchemas are the paths under schema (as JSON) where a subschema is
// written as true or false instead of an object: legal JSON Schema, but
// the MCP Inspector's portability check counts it an error.
func bareSchemas(schema any, at string) []string {
	b, err := json.Marshal(schema)
	if err != nil {
		return []string{at + ": " + err.Error()}
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return []string{at + ": " + err.Error()}
	}
	return bareIn(v, at)
}

// bareIn walks a schema's subschemas: properties, items and the
// combinators.
func bareIn(v any, at string) []string {
	if _, ok := v.(bool); ok {
		return []string{at}
	}
	m, _ := v.(map[string]any)
	var out []string
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			out = append(out, bareIn(p, at+".properties."+name)...)
		}
	}
	for _, key := range []string{"items", "not"} {
		if sub, ok := m[key]; ok {
			out = append(out, bareIn(sub, at+"."+key)...)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		subs, _ := m[key].([]any)
		for i, sub := range subs {
			out = append(out, bareIn(sub, at+"."+key+"["+strconv.Itoa(i)+"]")...)
		}
	}
	return out
}

// Every tool of the contract is documented in docs/assistants.md.
func TestToolsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/assistants.md")
	if err != nil {
		t.Fatal(err)
	}
	res, err := session(t, nothing{}).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if !strings.Contains(string(doc), "`"+tl.Name+"`") {
			t.Errorf("docs/assistants.md does not describe %s", tl.Name)
		}
	}
}

// firstDifference is the first line where a and b differ, with its
// neighbours.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		if i >= len(al) || i >= len(bl) || al[i] != bl[i] {
			line := func(l []string) string {
				if i < len(l) {
					return l[i]
				}
				return "(end)"
			}
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + line(al) + "\n  served:    " + line(bl)
		}
	}
	return ""
}
