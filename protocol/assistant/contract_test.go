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
	}
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
