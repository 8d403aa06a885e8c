package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// A provider whose versions are all unsigned cannot be installed through
// the registry protocol without --signing-key. Real tofu and terraform
// print nothing of a 404's body, so the proxy lists the versions with a
// warning that says why and what to do, which both print ("Additional
// provider information from registry"), and logs the reason.
func TestServeUnsignedReasonReachesClients(t *testing.T) {
	reg := testenv.StartRegistry(t)
	mustRun(t, "push", "provider", "--quiet", "--unsigned", testenv.Testdata(t, "providers", "inhouse", "0.1.0"), reg.Host+"/providers/test/inhouse")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, ">= 0.1"), "example.com/test/hello", s.Host+"/test/inhouse", 1)})
			out, err := c.new(t, "").Try(t, dir, "init", "-input=false", "-no-color")
			flat := strings.Join(strings.Fields(out), " ")
			if err == nil || !strings.Contains(flat, "Additional provider information from registry") ||
				!strings.Contains(flat, "0.1.0 has no publisher signature and this proxy has no signing key") ||
				!strings.Contains(flat, "install it through the proxy's network mirror") {
				t.Errorf("%s init does not show why: %v\n%s", c.name, err, out)
			}
		})
	}
	if !strings.Contains(s.logs.String(), `msg="no version can be offered through the registry protocol"`) {
		t.Errorf("no log line:\n%s", s.logs.String())
	}
	// Through the network mirror it installs.
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, ">= 0.1"), "example.com/test/hello", "example.com/test/inhouse", 1)})
	testenv.Tofu(t, networkMirrorConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
	lockEntry(t, dir, "example.com/test/inhouse", "0.1.0")
}
