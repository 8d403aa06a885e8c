package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// helloLifecyclePolicy deprecates hello 1.0.0 and revokes 1.1.0, each
// with a message clients must see.
const helloLifecyclePolicy = `
provider "*/*/*" {
  name = "hello-lifecycle"
  deprecated {
    versions = "1.0.0"
    message  = "hello 1.0 is end of life: move to 2.x"
  }
  revoked {
    versions = "1.1.0"
    message  = "CVE-2026-0001: hello 1.1.0 leaks the token"
  }
}
`

// serve --policy with deprecated and revoked blocks: real tofu and
// terraform install the deprecated 1.0.0 through the registry protocol
// and print its deprecation (a warning of the versions document); asked
// for the revoked 1.1.0, they fail and print the revocation's message.
func TestPolicyDeprecationReachesClients(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(helloLifecyclePolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", file)
	addr := s.Host + "/test/hello"
	config := func(constraint string) string {
		return strings.Replace(fmt.Sprintf(helloConfig, constraint), "example.com/test/hello", addr, 1)
	}
	for _, c := range clis {
		t.Run(c.name+" deprecated", func(t *testing.T) {
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": config("1.0.0")})
			out := c.new(t, "").Run(t, dir, "init", "-input=false", "-no-color")
			flat := strings.Join(strings.Fields(out), " ") // the clients wrap warnings
			if !strings.Contains(out, "Installed "+addr+" v1.0.0") ||
				!strings.Contains(flat, "Additional provider information from registry") ||
				!strings.Contains(flat, "version 1.0.0 of "+addr+" is deprecated: hello 1.0 is end of life: move to 2.x") {
				t.Errorf("%s init does not install 1.0.0 and print its deprecation:\n%s", c.name, out)
			}
		})
		t.Run(c.name+" revoked", func(t *testing.T) {
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": config("1.1.0")})
			out, err := c.new(t, "").Try(t, dir, "init", "-input=false", "-no-color")
			flat := strings.Join(strings.Fields(out), " ")
			if err == nil || strings.Contains(out, "Installed "+addr) ||
				!strings.Contains(flat, `1.1.0 is revoked by the policy's rule "hello-lifecycle": CVE-2026-0001: hello 1.1.0 leaks the token`) {
				t.Errorf("%s init does not refuse 1.1.0 with the revocation's message: %v\n%s", c.name, err, out)
			}
		})
	}
}
