package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Registries on non-default ports with ${hostname} inside the repository
// path (docs/proxy.md, "A host name with a port"): the port's ":" is
// written "_". `oci-tofu mirror` of the origin (localhost:PORT) and
// serve's network mirror agree on the repository; the proxy named by
// --registry-hostname with its own port (localhost:PORT2) pulls through
// into localhost_PORT2, and tofu and terraform install from it through
// the registry protocol, also with the origin stopped. tofu and terraform
// cannot ask a network mirror for such a provider at all
// (docs/reference.md §9), which this test checks too, so that the day
// they can, the docs are changed.
func TestHostWithPortInTemplate(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	tpl := reg.Host + "/pulled/${hostname}/${namespace}/${type}"
	originRepo := "pulled/" + strings.Replace(origin.Host, ":", "_", 1) + "/test/hello"
	mustRun(t, "mirror", "--quiet", "--provider-template", tpl, origin.Host+"/test/hello@= 1.0.0")
	if tagDigest(t, reg, originRepo, "1.0.0") == "" {
		t.Fatalf("`oci-tofu mirror` did not push %s:1.0.0", originRepo)
	}
	port := testenv.FreePort(t)
	self := fmt.Sprintf("localhost:%d", port)
	s := startServeOn(t, port, nil, "--provider-template", tpl, "--registry-hostname", self,
		"--pull-through-registry-origin", origin.Host, "--pull-through-origin", origin.Host)
	if code, body := s.get(t, "/v1/mirror/"+origin.Host+"/test/hello/index.json"); code != http.StatusOK || !strings.Contains(string(body), `"1.0.0"`) {
		t.Fatalf("network mirror index of %s/test/hello: %d %s", origin.Host, code, body)
	}
	// The page knows the proxy by that name: no host block is needed.
	if code, body := s.get(t, "/"); code != http.StatusOK || !strings.Contains(string(body), self+"/") || strings.Contains(string(body), "a host block in the CLI configuration sends that host here") {
		t.Errorf("the page, with --registry-hostname %s, its own address: %d\n%s", self, code, body)
	}
	main := func(host, version string) string {
		return strings.Replace(fmt.Sprintf(helloConfig, version), "example.com", host, 1)
	}
	out, err := testenv.Tofu(t, networkMirrorConfig(s)).Try(t, testenv.WriteConfig(t, map[string]string{"main.tf": main(origin.Host, "1.0.0")}), "init", "-input=false", "-no-color")
	if err == nil || !strings.Contains(strings.Join(strings.Fields(out), " "), `unsupported protocol scheme "localhost"`) {
		t.Errorf("tofu asked a network mirror for %s/test/hello: %v\n%s", origin.Host, err, out)
	}

	selfRepo := "pulled/" + strings.Replace(self, ":", "_", 1) + "/test/hello"
	install := func(t *testing.T, cli *testenv.CLI, version string) {
		t.Helper()
		out := cli.Run(t, testenv.WriteConfig(t, map[string]string{"main.tf": main(self, version)}), "init", "-input=false", "-no-color")
		if want := "Installed " + self + "/test/hello v" + version; !strings.Contains(out, want) {
			t.Fatalf("no %q:\n%s", want, out)
		}
	}
	install(t, testenv.Tofu(t, ""), "1.1.0") // pulled through from the origin
	waitForTag(t, reg, selfRepo, "1.1.0")
	origin.Stop()
	install(t, testenv.Tofu(t, ""), "1.1.0")
	install(t, testenv.Terraform(t, ""), "1.1.0")
	if tagDigest(t, reg, "pulled/localhost/test/hello", "1.1.0") != "" {
		t.Errorf("the release was stored under the host without its port too")
	}
}
