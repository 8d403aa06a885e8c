package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

const shortHelloConfig = `
terraform {
  required_providers {
    hello = {
      source  = "test/hello"
      version = "~> 1.0"
    }
  }
}
`

// lock --json prints one lower-case key style, and the hash counts lock
// reports (JSON and text) are those of the file it wrote.
func TestLockOutput(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	tpl := reg.Host + "/providers/${namespace}/${type}"
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "~> 1.0"), "m/main.tf": fmt.Sprintf(helloConfig, ">= 1.0")})
	appendTo(t, filepath.Join(dir, "main.tf"), `module "m" { source = "./m" }`+"\n")
	out := mustRun(t, "lock", "--json", "--provider-template", tpl, "--platform", "linux_amd64", "--platform", "darwin_arm64", dir)
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if keys := slices.Sorted(maps.Keys(res)); !slices.Equal(keys, []string{"for", "lock_file", "modules", "providers"}) {
		t.Errorf("top-level keys %v", keys)
	}
	if res["for"] != "tofu" || res["modules"] != 2.0 {
		t.Errorf("for %v, modules %v", res["for"], res["modules"])
	}
	providers, _ := res["providers"].([]any)
	if len(providers) != 1 {
		t.Fatalf("providers %v", res["providers"])
	}
	p := providers[0].(map[string]any)
	if keys := slices.Sorted(maps.Keys(p)); !slices.Equal(keys, []string{"address", "constraints", "hashes", "version"}) {
		t.Errorf("provider keys %v", keys)
	}
	written := lockEntry(t, dir, "example.com/test/hello", "1.1.0")
	if p["constraints"] != ">= 1.0.0, ~> 1.0" || len(p["hashes"].([]any)) != len(written.Hashes) || len(written.Hashes) != 2+5 {
		t.Errorf("JSON %v, file %+v", p, written)
	}

	human := mustRun(t, "lock", "--provider-template", tpl, "--platform", "linux_amd64", "--platform", "darwin_arm64", "--platform", "linux_amd64", dir)
	if !strings.Contains(human, "example.com/test/hello 1.1.0 (7 hashes)") || !strings.Contains(human, "for tofu (the existing .terraform.lock.hcl), 2 module(s) read") {
		t.Errorf("human output:\n%s", human)
	}
}

// Without --for, lock follows the traces a client left: the keys of the
// existing lock file, .tofu files; tofu otherwise. Short addresses are
// keyed accordingly.
func TestLockDetectsTheClient(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	tpl := reg.Host + "/providers/${namespace}/${type}"
	lockArgs := func(dir string, extra ...string) []string {
		return append(append([]string{"lock", "--provider-template", tpl, "--platform", "linux_amd64"}, extra...), dir)
	}

	tf := testenv.WriteConfig(t, map[string]string{"main.tf": shortHelloConfig})
	mustRun(t, lockArgs(tf, "--for", "terraform")...)
	lockEntry(t, tf, "registry.terraform.io/test/hello", "1.0.0")
	b, _ := os.ReadFile(filepath.Join(tf, ".terraform.lock.hcl"))
	if !strings.HasPrefix(string(b), `# This file is maintained automatically by "terraform init".`) {
		t.Errorf("Terraform's header expected:\n%s", b)
	}
	if out := mustRun(t, lockArgs(tf)...); !strings.Contains(out, "for terraform (the existing .terraform.lock.hcl)") {
		t.Errorf("terraform not detected from the lock file:\n%s", out)
	}
	lockEntry(t, tf, "registry.terraform.io/test/hello", "1.0.0")

	fresh := testenv.WriteConfig(t, map[string]string{"main.tf": shortHelloConfig})
	if out := mustRun(t, lockArgs(fresh)...); !strings.Contains(out, "for tofu (default)") {
		t.Errorf("default:\n%s", out)
	}
	lockEntry(t, fresh, "registry.opentofu.org/test/hello", "1.0.0")

	tofuFiles := testenv.WriteConfig(t, map[string]string{"main.tofu": shortHelloConfig})
	if out := mustRun(t, lockArgs(tofuFiles)...); !strings.Contains(out, "for tofu (.tofu files)") {
		t.Errorf(".tofu files:\n%s", out)
	}
	if out, err := run(t, lockArgs(tofuFiles, "--for", "pulumi")...); err == nil || !strings.Contains(out, "want tofu or terraform") {
		t.Errorf("--for pulumi: %v\n%s", err, out)
	}
}
