package moduledoc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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

// FuzzParseDoc reads arbitrary bytes as a stored interface: never a
// panic; what parses marshals (when small enough to store) to bytes that
// parse and marshal to themselves, and prints. Seeds are in
// testdata/fuzz/FuzzParseDoc.
func FuzzParseDoc(f *testing.F) {
	f.Add([]byte(`{"format":1,"package":{"root":{"path":"","inputs":[{"name":"x","type":"string","type_json":"string","default":"a","required":false}]},"submodules":[],"examples":[],"diagnostics":[]},"readmes":[{"path":"README.md","text":"# x","truncated":false}]}`))
	f.Add([]byte(`{"format":1,"package":{"root":{"diagnostics":[{"severity":"error","summary":"s","pos":{"file":"a.tf","line":1}}]}}}`))
	f.Add([]byte(`{"format":1,"package":{"root":{"inputs":[{"name":"\u001b[31m","default":{"a":[1,2]},"type_json":["object",{"a":"number"}]}]}}}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":1,"readmes":null,"package":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDoc(b)
		if err != nil {
			return
		}
		d.Print(io.Discard)
		once, err := d.Marshal()
		if err != nil {
			return // larger than is stored
		}
		again, err := ParseDoc(once)
		if err != nil {
			t.Fatalf("%s: %v", once, err)
		}
		twice, err := again.Marshal()
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("marshalled\n%s\nthen\n%s (%v)", once, twice, err)
		}
	})
}
