package publish_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// publish is below the protocols and the CLI (cmd → protocol/convert →
// oci): mirror and pull-through (protocol/ingest) and the push verbs
// call it; it calls none of them back.
func TestPublishPointsDown(t *testing.T) {
	const module = "github.com/oci-tofu/oci-tofu/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module+"protocol/") || strings.HasPrefix(p, module+"cmd/") {
				t.Errorf("%s imports %s: publish points down, to convert and oci", f, p)
			}
		}
	}
}
