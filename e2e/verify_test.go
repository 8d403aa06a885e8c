package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// `oci-tofu verify` against a real registry: a pushed provider and module
// pass; a platform manifest tagged directly fails with exit status 1 and a
// finding in --json.
func TestVerifyCommand(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	mustRun(t, "push", "module", "--quiet", testenv.Testdata(t, "modules", "greeting"), reg.Host+"/modules/acme/greeting/aws:1.0.0")
	out := mustRun(t, "verify", reg.Host+"/providers/test/hello", reg.Host+"/modules/acme/greeting/aws:1.0.0")
	if strings.Count(out, "passes every check") != 2 {
		t.Fatalf("good artifacts:\n%s", out)
	}
	// Tag a platform manifest directly, as a careless copy might.
	client, env := craneEnv(t, reg)
	digest := strings.TrimSpace(testenv.MustRun(t, "", env, client, "digest", "--platform", "linux/amd64", reg.Host+"/providers/test/hello:1.0.0"))
	testenv.MustRun(t, "", env, client, "tag", reg.Host+"/providers/test/hello@"+digest, "9.9.9")
	out, err := run(t, "verify", "--json", "--skip-zips", reg.Host+"/providers/test/hello:9.9.9")
	if err == nil {
		t.Fatalf("verify passed a platform manifest tagged as a version:\n%s", out)
	}
	var res struct {
		OK       bool `json:"ok"`
		Findings []struct{ Severity, Message string }
	}
	if jerr := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &res); jerr != nil {
		t.Fatalf("--json: %v\n%s", jerr, out)
	}
	if res.OK || len(res.Findings) == 0 || res.Findings[0].Severity != "error" || !strings.Contains(res.Findings[0].Message, "platform manifest") {
		t.Fatalf("findings: %+v", res)
	}
}

func craneEnv(t *testing.T, reg *testenv.Registry) (string, []string) {
	return testenv.Tool(t, "crane"), append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile)
}
