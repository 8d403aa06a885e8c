package cliconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadOCIMirrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tofu.rc")
	os.WriteFile(p, []byte(`
credentials "example.com" { token = "x" }
provider_installation {
  oci_mirror {
    repository_template = "ghcr.io/acme/hashicorp/${type}"
    include             = ["registry.opentofu.org/hashicorp/*"]
  }
  oci_mirror {
    repository_template = "harbor.example.com/tofu/${namespace}/${type}"
    exclude             = ["registry.opentofu.org/hashicorp/*"]
  }
  direct {}
}
`), 0o644)
	got, err := ReadOCIMirrors(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RepositoryTemplate != "ghcr.io/acme/hashicorp/${type}" || got[0].Include[0] != "registry.opentofu.org/hashicorp/*" || got[1].Exclude[0] != "registry.opentofu.org/hashicorp/*" {
		t.Fatalf("%+v", got)
	}
	os.WriteFile(p, []byte("provider_installation {\n  direct {}\n}\n"), 0o644)
	if _, err := ReadOCIMirrors(p); err == nil || !strings.Contains(err.Error(), "no provider_installation") {
		t.Fatalf("no oci_mirror: %v", err)
	}
	os.WriteFile(p, []byte("provider_installation {\n  oci_mirror {\n    include = [\"x\"]\n  }\n}\n"), 0o644)
	if _, err := ReadOCIMirrors(p); err == nil || !strings.Contains(err.Error(), "repository_template") {
		t.Fatalf("missing template: %v", err)
	}
}
