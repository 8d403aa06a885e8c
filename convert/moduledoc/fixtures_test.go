package moduledoc

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the directory of the repository's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}

// fixturePackages are the module packages of the repository's testdata
// trees: the outermost directories holding configuration files, found by
// walking every testdata directory (this package's hand-written modules
// included).
func fixturePackages(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	var pkgs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
			return filepath.SkipDir
		}
		if !strings.Contains(p+"/", "/testdata/") || !hasConfigFile(p) {
			return nil
		}
		pkgs = append(pkgs, p)
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pkgs)
	if len(pkgs) < 4 {
		t.Fatalf("found only %d module packages in testdata: %v", len(pkgs), pkgs)
	}
	return pkgs
}

func hasConfigFile(dir string) bool {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if !e.IsDir() && configExt(e.Name()) != "" {
			return true
		}
	}
	return false
}

// extractClean extracts a fixture, which must read without errors.
func extractClean(t *testing.T, dir string) *Package {
	t.Helper()
	p, err := ExtractDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.HasErrors() {
		t.Fatalf("%s: diagnostics: %+v %+v", dir, p.Diagnostics, allDiagnostics(p))
	}
	return p
}

func allDiagnostics(p *Package) []Diagnostic {
	out := append([]Diagnostic{}, p.Root.Diagnostics...)
	for _, m := range append(p.Submodules, p.Examples...) {
		out = append(out, m.Diagnostics...)
	}
	return out
}
