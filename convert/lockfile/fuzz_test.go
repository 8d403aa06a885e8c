package lockfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// FuzzReadLockFile: no .terraform.lock.hcl makes reading it panic, and
// what reads can be written and read back the same; its versions and
// constraints parse without panicking (go-versions panics on numbers
// beyond 64 bits).
func FuzzReadLockFile(f *testing.F) {
	f.Add([]byte(`# This file is maintained automatically by "tofu init".
provider "registry.opentofu.org/hashicorp/aws" {
  version     = "5.31.0"
  constraints = "~> 5.0"
  hashes = [
    "h1:abc=",
    "zh:0123",
  ]
}
`))
	f.Add([]byte(`provider "example.com/test/hello" { version = "99999999999999999999999.0.0" constraints = ">= 99999999999999999999999" }`))
	f.Add([]byte(`provider "x" {}` + "\nterraform {\n}\n"))
	p := filepath.Join(f.TempDir(), ".terraform.lock.hcl") // reused: one worker runs one input at a time
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		lf, err := lockfile.Read(p)
		if err != nil {
			return
		}
		for _, pr := range lf.Providers {
			names.ParseVersionLoose(pr.Version)
			names.ParseConstraints(pr.Constraints)
			names.ParseProvider(pr.Address)
		}
		if err := os.WriteFile(p, lf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		again, err := lockfile.Read(p)
		if err != nil || len(again.Providers) != len(lf.Providers) {
			t.Fatalf("written back, it does not read the same: %v\n%s", err, lf.Bytes())
		}
	})
}
