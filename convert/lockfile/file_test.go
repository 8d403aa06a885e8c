package lockfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
)

// The layout is OpenTofu's SaveLocksToBytes (the e2e suite compares it
// byte for byte with files real tofu and terraform write): providers by
// hostname, namespace, type; hashes sorted, each once; the header names
// the client.
func TestBytes(t *testing.T) {
	lf := &lockfile.File{Client: tfconfig.Terraform, Providers: []lockfile.Provider{
		{Address: "example.com/a/x", Version: "1.0.0", Hashes: []string{"zh:b", "h1:a", "zh:b"}},
		{Address: "example.com/a-b/x", Version: "2.0.0", Constraints: "~> 2.0"},
	}}
	want := `# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "example.com/a/x" {
  version = "1.0.0"
  hashes = [
    "h1:a",
    "zh:b",
  ]
}

provider "example.com/a-b/x" {
  version     = "2.0.0"
  constraints = "~> 2.0"
}
`
	if got := string(lf.Bytes()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	lf.Client = ""
	path := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
	if err := os.WriteFile(path, lf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := lockfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := back.Provider("example.com/a/x"); p == nil || len(p.Hashes) != 2 {
		t.Errorf("read back %+v", back.Providers)
	}
	if c, _ := tfconfig.DetectClient(filepath.Dir(path)); c != tfconfig.Tofu {
		t.Errorf("a tofu header detected as %s", c)
	}
}

// ReadExisting reads no file as no lock, and refuses one it cannot
// parse; ProviderSpecs are the locked providers, any version.
func TestReadExistingAndProviderSpecs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".terraform.lock.hcl")
	if lf, err := lockfile.ReadExisting(path); lf != nil || err != nil {
		t.Fatalf("no file: %v, %v", lf, err)
	}
	if err := os.WriteFile(path, []byte("provider {"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lockfile.ReadExisting(path); err == nil {
		t.Error("a broken lock file read")
	}
	lf := &lockfile.File{Providers: []lockfile.Provider{{Address: "registry.opentofu.org/hashicorp/aws", Version: "5.0.0"}}}
	specs, err := lf.ProviderSpecs()
	if err != nil || len(specs) != 1 || specs[0].Provider.String() != "registry.opentofu.org/hashicorp/aws" || specs[0].Constraints != nil {
		t.Errorf("%+v, %v", specs, err)
	}
}
