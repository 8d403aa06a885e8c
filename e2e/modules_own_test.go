package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Dependency confusion through the proxy's own module namespace: a module
// pushed privately as PROXY/acme/greeting/aws is also published at the
// origin by whoever owns "acme" there (1.99.0 below). Own-host
// pull-through is off by default: the listing is the registry's and the
// origin is never asked, not even the module's name; a wildcard pattern
// opens it for addresses the registry does not hold (acme/shout/aws,
// pulled and marked as pulled through) but never for one it holds pushed
// versions of; only the exact address merges the origin's versions in.
// The template has no ${hostname}, so the origin's own paths
// (/v1/origins/HOST/modules/acme/greeting/aws) name the same repository:
// serve refuses that unless --pull-through-shared-repositories, and even
// then no request there lists the origin's version with the pushed one or
// stores it (nor the pulled-through tag).
func TestOwnModulesAreNotConfusedWithTheOrigin(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	o.publish("acme/greeting/aws", "1.99.0", "git::"+o.gitURL+"?ref=v1.1.0", o.trees["acme/greeting/aws 1.1.0"])
	reg := testenv.StartRegistry(t)
	mustRun(t, "push", "module", "--quiet", greetingTree(t, "private"), reg.Host+"/pulled/acme/greeting/aws:1.0.0")
	args := func(extra ...string) []string {
		return append([]string{
			"--module-template", reg.Host + "/pulled/${namespace}/${name}/${system}",
			"--pull-through-module-origin", o.reg.Host,
			"--pull-through-module-source", o.git.Host,
			"--registry-hostname", "localhost", // as s.get names the proxy
			"--pull-through-shared-repositories",
		}, extra...)
	}
	tags := func(repo string) string {
		return testenv.MustRun(t, "", append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile), testenv.Tool(t, "crane"), "ls", reg.Host+"/pulled/"+repo)
	}
	asked := func(module string) int {
		return o.reg.Count(func(p string) bool { return strings.HasPrefix(p, "/v1/modules/"+module+"/") })
	}
	versions := func(t *testing.T, s *served, module string) (int, string) {
		t.Helper()
		code, body := s.get(t, "/v1/modules/"+module+"/versions")
		return code, string(body)
	}

	t.Run("refused without hostname", func(t *testing.T) {
		shared := args()
		out, err := run(t, append([]string{"serve", "--check"}, shared[:len(shared)-1]...)...)
		if err == nil || !strings.Contains(out, "has no ${hostname}") || !strings.Contains(out, "--pull-through-shared-repositories") {
			t.Errorf("serve with module pull-through into a template without ${hostname}: %v, want it refused naming the way out:\n%s", err, out)
		}
	})

	t.Run("origin paths", func(t *testing.T) {
		s := startServe(t, args()...)
		originPath := "/v1/origins/" + o.reg.Host + "/modules/acme/greeting/aws/"
		if code, body := s.get(t, originPath+"versions"); code != 200 || strings.Contains(string(body), "1.99.0") {
			t.Errorf("the origin's greeting: %d %s; want the pushed 1.0.0 only", code, body)
		}
		if code, body := s.get(t, originPath+"1.99.0/download"); code != http.StatusNotFound || !strings.Contains(string(body), "pushed") {
			t.Errorf("the origin's 1.99.0 download: %d %s, want 404 naming the pushed versions", code, body)
		}
		if got := tags("acme/greeting/aws"); strings.Contains(got, "1.99.0") || strings.Contains(got, "oci-tofu.pulled-through") {
			t.Errorf("a request on the origin's paths wrote into the pushed repository: %s", got)
		}
		if code, body := versions(t, s, "acme/greeting/aws"); code != 200 || strings.Contains(body, "1.99.0") {
			t.Errorf("greeting under the proxy's name: %d %s; want the pushed 1.0.0 only", code, body)
		}
	})

	t.Run("off by default", func(t *testing.T) {
		s := startServe(t, args()...)
		if code, body := versions(t, s, "acme/greeting/aws"); code != 200 || !strings.Contains(body, `"1.0.0"`) || strings.Contains(body, "1.99.0") {
			t.Errorf("greeting: %d %s; want the pushed 1.0.0 only", code, body)
		}
		if code, _ := versions(t, s, "acme/shout/aws"); code != http.StatusNotFound {
			t.Errorf("shout (not held): %d, want 404", code)
		}
		if code, _ := s.get(t, "/v1/modules/acme/shout/aws/1.0.0/download"); code != http.StatusNotFound {
			t.Errorf("shout's download: %d, want 404", code)
		}
		if n := asked("acme/greeting/aws") + asked("acme/shout/aws"); n != 0 {
			t.Errorf("the origin was asked %d times about own-host modules", n)
		}
		if _, page := s.get(t, "/"); strings.Contains(string(page), `id="own-modules"`) {
			t.Error("the page warns of own-host pull-through that is off")
		}
	})

	t.Run("wildcard", func(t *testing.T) {
		s := startServe(t, args("--pull-through-own-modules", "acme/*/*")...)
		if code, body := versions(t, s, "acme/greeting/aws"); code != 200 || strings.Contains(body, "1.99.0") {
			t.Errorf("greeting (held, pushed): %d %s; want the pushed 1.0.0 only", code, body)
		}
		if code, _ := s.get(t, "/v1/modules/acme/greeting/aws/1.99.0/download"); code != http.StatusNotFound {
			t.Errorf("greeting 1.99.0's download: %d, want 404", code)
		}
		if n := asked("acme/greeting/aws"); n != 0 {
			t.Errorf("the origin was asked %d times about a module the registry holds pushed versions of", n)
		}
		if code, body := versions(t, s, "acme/shout/aws"); code != 200 || !strings.Contains(body, `"1.0.0"`) {
			t.Fatalf("shout (not held): %d %s; want the origin's 1.0.0", code, body)
		}
		if code, _ := s.get(t, "/v1/modules/acme/shout/aws/1.0.0/download"); code != http.StatusNoContent {
			t.Fatalf("shout's download: %d, want 204 after the pull", code)
		}
		if got := tags("acme/shout/aws"); !strings.Contains(got, "oci-tofu.pulled-through") {
			t.Errorf("the pulled repository is not marked as pulled through: %s", got)
		}
		if _, page := s.get(t, "/"); !strings.Contains(string(page), `id="own-modules"`) {
			t.Error("the page does not warn of own-host pull-through")
		}
	})

	t.Run("exact address", func(t *testing.T) {
		s := startServe(t, args("--pull-through-own-modules", "acme/greeting/aws")...)
		if code, body := versions(t, s, "acme/greeting/aws"); code != 200 || !strings.Contains(body, "1.99.0") || !strings.Contains(body, `"1.0.0"`) {
			t.Errorf("greeting listed exactly: %d %s; want the pushed 1.0.0 and the origin's versions", code, body)
		}
	})
}
