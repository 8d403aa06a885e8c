package source_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/oci-tofu/oci-tofu/"

// root is the module's directory, from this package's.
const root = "../.."

// parseDir is the non-test Go files of dir (a directory of the module).
func parseDir(t *testing.T, dir string, mode parser.Mode) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, name), nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// moduleDeps are the module's packages pkg (a directory of the module)
// depends on, directly or not, as `go list -deps` lists them.
func moduleDeps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	next := []string{pkg}
	for len(next) > 0 {
		dir := next[0]
		next = next[1:]
		for _, f := range parseDir(t, dir, parser.ImportsOnly) {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(p, module); ok && !seen[rest] {
					seen[rest] = true
					next = append(next, rest)
				}
			}
		}
	}
	return seen
}

// The seam is pure: package source and the sources wrapping one
// another (held, merged, gate) depend neither on the pull-through engine
// nor on ingest; pulled knows the engine only through the interfaces it
// defines, which the proxy's sources.go fills with the engine.
func TestTheSeamDependsOnNeitherPullThroughNorIngest(t *testing.T) {
	for _, pkg := range []string{"protocol/source", "protocol/source/held", "protocol/source/merged", "protocol/source/gate"} {
		deps := moduleDeps(t, pkg)
		for _, banned := range []string{"protocol/pullthrough", "protocol/ingest"} {
			if deps[banned] {
				t.Errorf("%s depends on %s: the seam knows no engine; sources.go composes them", pkg, banned)
			}
		}
	}
}

// pulled wraps the interfaces, not their implementations: it imports no
// held source, and what its exported types and functions take names no
// concrete engine (OpenTofu's getproviders: a source and its decorators
// take the interface).
func TestPulledTakesInterfaces(t *testing.T) {
	for _, f := range parseDir(t, "protocol/source/pulled", parser.SkipObjectResolution) {
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, module+"protocol/source/held") {
				t.Errorf("pulled imports %s: it wraps source interfaces", p)
			}
		}
		for _, decl := range f.Decls {
			for _, in := range exportedInputs(decl) {
				ast.Inspect(in.expr, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "pullthrough" && sel.Sel.Name == "Engine" {
							t.Errorf("pulled's %s takes *pullthrough.Engine: take an interface pulled defines", in.of)
						}
					}
					return true
				})
			}
		}
	}
}

// input is what an exported declaration takes, and whose it is.
type input struct {
	of   string
	expr ast.Expr
}

// exportedInputs are what an exported declaration takes: an exported
// function's parameters, an exported struct's exported fields.
func exportedInputs(decl ast.Decl) []input {
	var out []input
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Name.IsExported() {
			for _, p := range d.Type.Params.List {
				out = append(out, input{d.Name.Name, p.Type})
			}
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				if len(fl.Names) == 0 || fl.Names[0].IsExported() {
					out = append(out, input{ts.Name.Name, fl.Type})
				}
			}
		}
	}
	return out
}
