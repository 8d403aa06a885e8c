package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// `serve --config` takes the oci_mirror blocks of a tofu CLI configuration:
// the first block whose include/exclude admits a provider names its
// repository; providers no block admits are 404.
func TestServeConfigFileMappings(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/team-a/test/hello", "1.0.0")
	pushHello(t, reg.Host+"/everyone/test/hello", "1.1.0")
	cfg := filepath.Join(t.TempDir(), "tofu.rc")
	os.WriteFile(cfg, []byte(`
provider_installation {
  oci_mirror {
    repository_template = "`+reg.Host+`/team-a/${namespace}/${type}"
    include             = ["a.example.com/*/*"]
  }
  oci_mirror {
    repository_template = "`+reg.Host+`/everyone/${namespace}/${type}"
    exclude             = ["blocked.example.com/*/*"]
  }
}
`), 0o644)
	s := startServe(t, "--config", cfg)
	versions := func(host string) (int, map[string]any) {
		code, body := s.get(t, "/v1/mirror/"+host+"/test/hello/index.json")
		var doc struct{ Versions map[string]any }
		json.Unmarshal(body, &doc)
		return code, doc.Versions
	}
	if code, v := versions("a.example.com"); code != 200 || len(v) != 1 || v["1.0.0"] == nil {
		t.Errorf("first mapping: %d %v", code, v)
	}
	if code, v := versions("b.example.com"); code != 200 || len(v) != 1 || v["1.1.0"] == nil {
		t.Errorf("second mapping: %d %v", code, v)
	}
	if code, _ := versions("blocked.example.com"); code != 404 {
		t.Errorf("excluded provider: %d", code)
	}
	// The same file drives real tofu through the proxy.
	tofu := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": `
terraform {
  required_providers {
    hello = { source = "a.example.com/test/hello" }
  }
}
`})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	lockEntry(t, dir, "a.example.com/test/hello", "1.0.0")
}
