package proxy_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/oci-tofu/oci-tofu/"

// imports are the imports of every non-test Go file under dir, by file.
func imports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[path] = append(out[path], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no Go files under %s", dir)
	}
	return out
}

// The layers of docs/architecture.md: the sources never speak HTTP nor
// know the proxy; the proxy's handlers see only the seam (package
// source), and the stacks of held, pulled, merged and gate sources are
// composed in one file, sources.go.
func TestSourcesAndHandlersKeepTheirLayers(t *testing.T) {
	for file, imps := range imports(t, "../source") {
		for _, p := range imps {
			if p == "net/http" || strings.HasPrefix(p, module+"protocol/proxy") {
				t.Errorf("%s imports %s: sources answer with model values and typed errors, never HTTP", file, p)
			}
		}
	}
	for file, imps := range imports(t, ".") {
		for _, p := range imps {
			rest, ok := strings.CutPrefix(p, module+"protocol/source/")
			if ok && filepath.Base(file) != "sources.go" {
				t.Errorf("%s imports the %s source: only sources.go builds the stacks; handlers use package source", file, rest)
			}
		}
	}
}

// The proxy's own packages point one way: the protocol families'
// handlers (providers, modules, tofudl) answer through respond alone and
// know nothing of each other; the page shows their paths; respond hands
// blobs to deliver, which answers for itself; only the server (this
// package) knows them all.
func TestProxyPackagesPointOneWay(t *testing.T) {
	allowed := map[string][]string{
		"respond":        {"deliver"},
		"deliver":        nil,
		"providers":      {"respond"},
		"modules":        {"respond"},
		"tofudl":         {"respond"},
		"page":           {"respond", "providers", "modules", "tofudl", "catalog"},
		"catalog":        {"respond", "catalog/readme"},
		"catalog/readme": nil,
	}
	for pkg, may := range allowed {
		for file, imps := range imports(t, pkg) {
			for _, p := range imps {
				rest, ok := strings.CutPrefix(p, module+"protocol/proxy")
				if ok && !slices.Contains(may, strings.TrimPrefix(rest, "/")) {
					t.Errorf("%s imports %s: %s may import only %v of the proxy's packages", file, p, pkg, may)
				}
			}
		}
	}
}

// The page shows what the proxy serves and what it recorded being
// served: it reads neither the sources nor the store. It imports neither,
// and none of its imports outside the proxy's own packages (respond and
// the protocol families', whose paths it shows) leads to them.
func TestPageReadsNeitherSourceNorStore(t *testing.T) {
	forbidden := func(p string) bool {
		return p == module+"protocol/store" || p == module+"protocol/source" || strings.HasPrefix(p, module+"protocol/source/")
	}
	var others []string
	for file, imps := range imports(t, "page") {
		for _, p := range imps {
			switch {
			case forbidden(p):
				t.Errorf("%s imports %s: the page reads neither the sources nor the store", file, p)
			case strings.HasPrefix(p, module) && !strings.HasPrefix(p, module+"protocol/proxy/"):
				others = append(others, p)
			}
		}
	}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, slices.Compact(slices.Sorted(slices.Values(others)))...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if forbidden(dep) {
			t.Errorf("the page's imports %v lead to %s: the page reads neither the sources nor the store", others, dep)
		}
	}
}
