package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// `oci-tofu verify` reads tags as tofu's oci_mirror does, and its exit
// status says what tofu says: a repository whose extra tags tofu ignores
// (latest, v1.0.0) or resolves to an existing canonical tag (1.0 → 1.0.0)
// passes with warnings, and tofu installs from it; a tag 1.1 without a tag
// 1.1.0 is an error, and tofu fails on it.
func TestVerifyReadsTagsAsTofu(t *testing.T) {
	reg := testenv.StartRegistry(t)
	crane, env := craneEnv(t, reg)
	tag := func(repo, from string, tags ...string) {
		for _, to := range tags {
			testenv.MustRun(t, "", env, crane, "tag", repo+":"+from, to)
		}
	}
	ok := reg.Host + "/tags/ok/hello"
	bad := reg.Host + "/tags/bad/hello"
	pushHello(t, ok, "1.0.0")
	pushHello(t, bad, "1.0.0")
	tag(ok, "1.0.0", "latest", "v1.0.0", "1.0")
	tag(bad, "1.0.0", "1.1")

	out, err := run(t, "verify", "--skip-zips", ok)
	if err != nil || strings.Contains(out, "error ") || strings.Count(out, "warning ") < 3 {
		t.Errorf("tags tofu ignores or resolves must give warnings only: %v\n%s", err, out)
	}
	out, err = run(t, "verify", "--skip-zips", bad)
	if err == nil || !strings.Contains(out, `OpenTofu then fails resolving tag "1.1.0"`) {
		t.Errorf("a 1.1 tag without 1.1.0 must be an error: %v\n%s", err, out)
	}

	tofu := testenv.Tofu(t, ociMirrorCLIConfig(reg.Host+"/tags/${namespace}/${type}", "example.com/*/*"))
	install := func(namespace string) (string, error) {
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(`
terraform {
  required_providers {
    hello = {
      source  = "example.com/%s/hello"
      version = "~> 1.0"
    }
  }
}
`, namespace)})
		return tofu.Try(t, dir, "init", "-input=false", "-no-color")
	}
	if out, err := install("ok"); err != nil || !strings.Contains(out, "Installed example.com/ok/hello v1.0.0") {
		t.Errorf("tofu from the repository verify passes: %v\n%s", err, out)
	}
	if out, err := install("bad"); err == nil || !strings.Contains(out, `resolving tag "1.1.0"`) {
		t.Errorf("tofu from the repository verify fails: %v\n%s", err, out)
	}
}
