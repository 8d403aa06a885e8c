package tfconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
)

// FuzzRequiredProviders: no configuration (HCL or its JSON form) makes
// reading its required_providers panic.
func FuzzRequiredProviders(f *testing.F) {
	f.Add([]byte(`terraform {
  required_providers {
    hello = { source = "example.com/test/hello", version = "~> 1.0" }
    aws   = { version = ">= 99999999999999999999999" }
  }
}
`), false)
	f.Add([]byte(`{"terraform":{"required_providers":{"x":{"source":"a/b","version":"1.0.0"}}}}`), true)
	f.Add([]byte(`terraform { required_providers { x = "1.0" } }`), false)
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, json bool) {
		dir := filepath.Join(base, "hcl") // one file, one worker at a time
		if json {
			dir = filepath.Join(base, "json")
		}
		name := map[bool]string{false: "main.tf", true: "main.tf.json"}[json]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		tfconfig.RequiredProviders(dir)
	})
}
