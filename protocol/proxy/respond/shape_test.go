package respond

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines bounds the package's files: one concern a file.
const maxFileLines = 450

// sources are the package's non-test files, parsed.
func sources(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset, files := token.NewFileSet(), map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return fset, files
}

func TestNoFileIsLong(t *testing.T) {
	_, files := sources(t)
	for name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it by concern", name, n, maxFileLines)
		}
	}
}

// What a request notes (its audit event, its log line's error and hint)
// travels in its context (notesOf, EventOf), never in its response
// writer: nothing asserts an http.ResponseWriter's type to find it.
func TestNothingAssertsTheResponseWriter(t *testing.T) {
	fset, files := sources(t)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			fn, ok := n.(*ast.FuncDecl)
			if !ok {
				return true
			}
			writers := map[string]bool{}
			for _, p := range fn.Type.Params.List {
				if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "ResponseWriter" {
					for _, id := range p.Names {
						writers[id.Name] = true
					}
				}
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if ta, ok := n.(*ast.TypeAssertExpr); ok {
					if id, ok := ta.X.(*ast.Ident); ok && writers[id.Name] {
						t.Errorf("%s: %s asserts the type of response writer %s: note on the request's context instead", fset.Position(ta.Pos()), fn.Name.Name, id.Name)
					}
				}
				return true
			})
			return false
		})
	}
}

// The audit event is filled in one file, audit.go: only it names
// audit.Event's fields or makes one (metrics.go reads what it counts).
func TestOneFileFillsTheAuditEvent(t *testing.T) {
	fset, files := sources(t)
	for name, f := range files {
		if name == "audit.go" || name == "metrics.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "audit" && sel.Sel.Name == "Event" {
					t.Errorf("%s: %s names audit.Event: the event is filled in audit.go alone (Event's methods)", fset.Position(sel.Pos()), name)
				}
			}
			return true
		})
	}
}
