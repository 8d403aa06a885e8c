package moduledoc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkExtractFeatures extracts the features fixture (root, two
// submodules, an example).
func BenchmarkExtractFeatures(b *testing.B) {
	dir := filepath.Join("testdata", "modules", "features")
	for b.Loop() {
		if _, err := ExtractDir(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtractManyVariables extracts a module of MaxBlocks
// variables, the most one module may have.
func BenchmarkExtractManyVariables(b *testing.B) {
	var sb strings.Builder
	for i := range MaxBlocks {
		fmt.Fprintf(&sb, "variable \"v%d\" {\n  type    = object({ a = optional(string, \"x\") })\n  default = {}\n}\n", i)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ExtractDir(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}
