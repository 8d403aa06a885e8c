package moduledoc

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// writeFiles writes files (slash-separated names) under a new directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// extractQuickly extracts dir, which must take under 10 s and marshal.
func extractQuickly(t *testing.T, dir string) *Package {
	t.Helper()
	start := time.Now()
	p, err := ExtractDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("extraction took %v", d)
	}
	return p
}

// wantDiag finds a diagnostic with summary in ds, at file when given.
func wantDiag(t *testing.T, ds []Diagnostic, summary, file string) Diagnostic {
	t.Helper()
	for _, d := range ds {
		if d.Summary == summary && (file == "" || d.Pos != nil && d.Pos.File == file) {
			return d
		}
	}
	t.Fatalf("no diagnostic %q (at %q) in %+v", summary, file, ds)
	return Diagnostic{}
}

func TestParseErrorIsPerFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"good.tf":             `variable "ok" { type = string }`,
		"broken.tf":           "variable \"bad\" {\n  type = \n",
		"modules/a/main.tf":   `output "x" { value = 1 }`,
		"modules/b/main.tf":   `variable {`,
		"examples/e/main.tf":  `module "m" { source = "../.." }`,
		"broken.tf.json":      `{"variable": [`,
		"unknownblock.tf":     `whatever "x" { y = 1 }`,
		"badtype.tf":          `variable "t" { type = lisst(string) }`,
		"baddefault.tf":       "variable \"d\" {\n  type = number\n  default = \"x\"\n}",
		"quoted.tf":           `variable "q" { type = "string" }`,
		"nonconstdefault.tf":  `variable "n" { default = var.ok }`,
		"emptydeprecation.tf": `variable "e" { deprecated = " " }`,
	})
	p := extractQuickly(t, dir)
	ds := p.Root.Diagnostics
	d := wantDiag(t, ds, "Invalid expression", "broken.tf")
	if d.Pos.Line != 2 || d.Severity != SeverityError {
		t.Errorf("diagnostic %+v", d)
	}
	wantDiag(t, ds, "Invalid type specification", "badtype.tf")
	wantDiag(t, ds, "Invalid default value for variable", "baddefault.tf")
	wantDiag(t, ds, "Invalid quoted type constraints", "quoted.tf")
	wantDiag(t, ds, "Variables not allowed", "nonconstdefault.tf")
	wantDiag(t, ds, "Invalid `deprecated` value", "emptydeprecation.tf")
	if !p.HasErrors() {
		t.Error("HasErrors is false")
	}
	names := map[string]bool{}
	for _, in := range p.Root.Inputs {
		names[in.Name] = true
	}
	for _, want := range []string{"ok", "t", "d", "q", "n", "e"} {
		if !names[want] {
			t.Errorf("input %s missing from %v", want, names)
		}
	}
	if len(p.Submodules) != 2 || len(p.Submodules[0].Outputs) != 1 || len(p.Submodules[1].Diagnostics) == 0 || len(p.Examples) != 1 {
		t.Errorf("submodules %+v examples %+v", p.Submodules, p.Examples)
	}
}

func TestTenThousandVariables(t *testing.T) {
	var b strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&b, "variable \"v%d\" {\n  type    = string\n  default = \"%d\"\n}\n", i, i)
	}
	p := extractQuickly(t, writeFiles(t, map[string]string{"main.tf": b.String()}))
	if len(p.Root.Inputs) != MaxBlocks {
		t.Errorf("%d inputs, want the first %d", len(p.Root.Inputs), MaxBlocks)
	}
	d := wantDiag(t, p.Root.Diagnostics, "Too many blocks", "main.tf")
	if !strings.Contains(d.Detail, fmt.Sprint(MaxBlocks)) {
		t.Errorf("detail %q", d.Detail)
	}
}

func TestDeeplyNestedTypes(t *testing.T) {
	deep := func(n int) string {
		return strings.Repeat("list(", n) + "string" + strings.Repeat(")", n)
	}
	p := extractQuickly(t, writeFiles(t, map[string]string{
		"ok.tf":        fmt.Sprintf("variable \"ok\" { type = %s }", deep(MaxTypeDepth)),
		"deep.tf":      fmt.Sprintf("variable \"deep\" { type = %s }", deep(MaxTypeDepth+1)),
		"deeper.tf":    fmt.Sprintf("variable \"deeper\" { type = %s }", deep(100_000)),
		"default.tf":   fmt.Sprintf("variable \"nest\" { default = %s1%s }", strings.Repeat("[", 100_000), strings.Repeat("]", 100_000)),
		"json.tf.json": fmt.Sprintf(`{"variable": {"j": {"type": %q}}}`, deep(MaxTypeDepth+1)),
		"nestok.tf":    fmt.Sprintf("variable \"nest_ok\" { default = %s1%s }", strings.Repeat("[", MaxNesting-1), strings.Repeat("]", MaxNesting-1)),
	}))
	ds := p.Root.Diagnostics
	wantDiag(t, ds, "Type constraint too deep", "deep.tf")
	wantDiag(t, ds, "Type constraint too deep", "json.tf.json")
	wantDiag(t, ds, "Nesting too deep", "deeper.tf")
	wantDiag(t, ds, "Nesting too deep", "default.tf")
	var ok, nestOK *Input
	for i, in := range p.Root.Inputs {
		switch in.Name {
		case "ok":
			ok = &p.Root.Inputs[i]
		case "nest_ok":
			nestOK = &p.Root.Inputs[i]
		}
	}
	if nestOK == nil || !strings.HasPrefix(string(nestOK.Default), strings.Repeat("[", MaxNesting-1)+"1") {
		t.Errorf("input nest_ok: %+v", nestOK)
	}
	if ok == nil || !strings.HasPrefix(string(ok.TypeJSON), `["list",["list",`) {
		t.Errorf("input ok: %+v", ok)
	}
}

func TestSymlinksOutOfThePackage(t *testing.T) {
	outside := writeFiles(t, map[string]string{
		"secret.tf":       `variable "stolen" {}`,
		"mod/main.tf":     `variable "stolen_too" {}`,
		"README.md":       "outside",
		"modules/main.tf": `variable "stolen_three" {}`,
	})
	dir := writeFiles(t, map[string]string{
		"main.tf":             `variable "mine" {}`,
		"modules/in/main.tf":  `variable "inner" {}`,
		"examples/ex/main.tf": `variable "ex" {}`,
	})
	for link, target := range map[string]string{
		"secret.tf":           filepath.Join(outside, "secret.tf"),
		"README.md":           filepath.Join(outside, "README.md"),
		"modules/evil":        filepath.Join(outside, "mod"),
		"modules/dotdot":      "../../" + filepath.Base(outside) + "/mod",
		"examples/ex/up.tf":   "../../../" + filepath.Base(outside) + "/secret.tf",
		"examples/linked":     "../modules/in",
		"modules/in/again.tf": "../../main.tf",
		"dangling.tf":         "nowhere.tf",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	p := extractQuickly(t, dir)
	out, _ := json.Marshal(p)
	if strings.Contains(string(out), "stolen") {
		t.Fatalf("read through a link out of the package: %s", out)
	}
	for _, name := range []string{"secret.tf", "README.md", "dangling.tf"} {
		wantDiagDetail(t, p.Root.Diagnostics, "Symbolic link not followed", name)
	}
	wantDiagDetail(t, p.Diagnostics, "Symbolic link not followed", "modules/evil")
	wantDiagDetail(t, p.Diagnostics, "Symbolic link not followed", "modules/dotdot")
	if p.Root.README != "" {
		t.Errorf("README %q", p.Root.README)
	}
	// Links inside the package are followed, as push module follows them.
	if len(p.Examples) != 2 || p.Examples[1].Path != "examples/linked" || len(p.Examples[1].Inputs) != 2 || p.Examples[1].Inputs[1].Name != "inner" {
		t.Errorf("examples %+v", p.Examples)
	}
	if len(p.Submodules) != 1 || len(p.Submodules[0].Inputs) != 2 {
		t.Errorf("submodules %+v", p.Submodules)
	}
}

func wantDiagDetail(t *testing.T, ds []Diagnostic, summary, inDetail string) {
	t.Helper()
	for _, d := range ds {
		if d.Summary == summary && strings.Contains(d.Detail, inDetail) {
			return
		}
	}
	t.Errorf("no diagnostic %q about %s in %+v", summary, inDetail, ds)
}

func TestHugeFiles(t *testing.T) {
	huge := strings.Repeat("# padding\n", MaxFileSize/10+1)
	files := map[string]string{
		"main.tf":   `variable "small" {}`,
		"huge.tf":   huge + `variable "hidden" {}`,
		"long.tf":   `variable "long" { default = "` + strings.Repeat("x", MaxDefaultSize) + `" }`,
		"README.md": "# r",
	}
	// Enough files just under MaxFileSize to pass MaxTotalSize.
	chunk := strings.Repeat("#", MaxFileSize-100)
	for i := range MaxTotalSize/MaxFileSize + 1 {
		files[fmt.Sprintf("modules/m/pad%02d.tf", i)] = chunk
	}
	p := extractQuickly(t, writeFiles(t, files))
	wantDiag(t, p.Root.Diagnostics, "File too large", "huge.tf")
	wantDiag(t, p.Root.Diagnostics, "Default value too large to show", "long.tf")
	if len(p.Root.Inputs) != 2 || p.Root.README != "README.md" {
		t.Errorf("inputs %+v, readme %q", p.Root.Inputs, p.Root.README)
	}
	d := wantDiag(t, p.Submodules[0].Diagnostics, "File too large", "")
	if !strings.Contains(d.Detail, "add up to more than") {
		t.Errorf("diagnostic %+v", d)
	}
}

func TestManyFilesAndModules(t *testing.T) {
	files := map[string]string{}
	for i := range MaxModules + 5 {
		files[fmt.Sprintf("modules/m%03d/main.tf", i)] = `variable "x" {}`
	}
	for i := range MaxFiles {
		files[fmt.Sprintf("f%04d.tf", i)] = `# empty`
	}
	p := extractQuickly(t, writeFiles(t, files))
	if len(p.Submodules) != MaxModules {
		t.Errorf("%d submodules", len(p.Submodules))
	}
	wantDiag(t, p.Diagnostics, "Too many modules", "")
	wantDiag(t, p.Submodules[0].Diagnostics, "Too many configuration files", "")
}

// TestZipEqualsDirectory reads every fixture packed by push module's
// packer and checks the zip gives the same interface as the directory.
func TestZipEqualsDirectory(t *testing.T) {
	for _, pkg := range fixturePackages(t) {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			want := extractClean(t, pkg)
			z, err := modulepkg.Pack(context.Background(), pkg, modulepkg.Options{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			zr, err := zip.OpenReader(z.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			got, err := Extract(context.Background(), zr)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("zip:\n%s\ndirectory:\n%s", g, w)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Extract(ctx, fstest.MapFS{"main.tf": {Data: []byte(`variable "x" {}`)}}); err == nil {
		t.Error("no error from a cancelled context")
	}
}
