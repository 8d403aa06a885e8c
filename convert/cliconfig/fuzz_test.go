package cliconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/cliconfig"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// FuzzReadOCIMirrors: no CLI configuration makes reading it panic, nor
// the templates it holds.
func FuzzReadOCIMirrors(f *testing.F) {
	f.Add([]byte(`provider_installation {
  oci_mirror {
    repository_template = "ghcr.io/acme/${namespace}/${type}"
    include             = ["example.com/*/*"]
  }
  direct {}
}
`))
	f.Add([]byte(`provider_installation { oci_mirror { repository_template = "${hostname}" exclude = [1] } }`))
	f.Add([]byte(`credentials "x" { token = "y" }`))
	p := filepath.Join(f.TempDir(), "tofu.rc") // reused: one worker runs one input at a time
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ms, err := cliconfig.ReadOCIMirrors(p)
		if err != nil {
			return
		}
		for _, m := range ms {
			repotemplate.ParseProviderTemplate(m.RepositoryTemplate)
		}
	})
}
