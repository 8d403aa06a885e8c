package moduledoc

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"
)

// FuzzExtract reads arbitrary bytes as a native-syntax and a JSON
// configuration file, and as a submodule's: never a panic, always a
// result that marshals, every diagnostic with a summary. Seeds are in
// testdata/fuzz/FuzzExtract.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(`variable "x" { type = object({ a = optional(string, "d") }) default = {} }`))
	f.Add([]byte(`{"variable": {"x": {"type": "list(string)", "default": ["a"]}}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		fsys := fstest.MapFS{
			"main.tf":                {Data: src},
			"main.tf.json":           {Data: src},
			"override.tf":            {Data: src},
			"modules/a/variables.tf": {Data: src},
		}
		p, err := Extract(context.Background(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatal(err)
		}
		for _, d := range append(allDiagnostics(p), p.Diagnostics...) {
			if d.Summary == "" || (d.Severity != SeverityError && d.Severity != SeverityWarning) {
				t.Fatalf("diagnostic %+v", d)
			}
		}
	})
}
