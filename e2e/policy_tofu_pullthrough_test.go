package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// TofuDL pull-through under a tofu rule with min_age: nothing is handed
// out from the origin. api.json lists what the registry holds and has
// aged in; listing it pulls the origin's newest releases in the
// background (attested with the proxy's --attest-key, which starts their
// clock); a file of a release not yet held is 404 saying it is being
// fetched; once old enough, the reference TofuDL client downloads it
// from the registry, with no restart and no second origin download.
func TestPolicyTofuPullThroughMinAge(t *testing.T) {
	const minAge = 6 * time.Second
	reg := testenv.StartRegistry(t)
	origin := startTofuOrigin(t)
	key, _ := ecdsaKeyPair(t)
	file := factsPolicyFile(t, fmt.Sprintf(`tofu {
  name     = "tofu-cool-down"
  versions = "< 1.10.0"
  min_age  = "%s"
}`, minAge), nil)
	args := append(tofuPullArgs(origin, reg.Host+"/pulled/opentofu", testenv.Testdata(t, "keys", "gpg-signer.asc")), "--policy", file, "--attest-key", key,
		"--tag-ttl", "1s", "--resolve-ttl", "1s", "--failure-ttl", "1s")
	s := startServe(t, args...)
	dl := newTofuDL(t, s)

	code, body := s.get(t, "/tofu/download/v1.9.0/tofu_1.9.0_linux_amd64.tar.gz")
	if code != 404 || !strings.Contains(string(body), `is being fetched from its origin, and the policy's rule \"tofu-cool-down\" serves it`) {
		t.Fatalf("1.9.0's archive before it is held: %d %s", code, body)
	}
	if ids := apiIDs(t, dl); len(ids) != 0 {
		t.Fatalf("api.json lists %v before anything aged in, want nothing", ids)
	}
	for _, v := range []string{"1.8.0", "1.9.0"} {
		waitTag(t, reg, "pulled/opentofu", v, 30*time.Second)
	}
	if ids := apiIDs(t, dl); len(ids) != 0 {
		t.Errorf("api.json lists %v right after the pulls, want nothing (younger than min_age)", ids)
	}
	// Stored, but younger than min_age (or, within the 1 s TTLs, still
	// remembered as not held): never served.
	if code, body := s.get(t, "/tofu/download/v1.9.0/tofu_1.9.0_SHA256SUMS"); code != 404 || !strings.Contains(string(body), "tofu-cool-down") {
		t.Errorf("1.9.0's SHA256SUMS while too young: %d %s", code, body)
	}
	if d := tagDigest(t, reg, "pulled/opentofu", "1.10.0-beta1"); d != "" {
		t.Errorf("1.10.0-beta1, which the rule's versions deny, was pulled: %s", d)
	}

	waitServed(t, s, "/tofu/download/v1.9.0/tofu_1.9.0_SHA256SUMS", 5*minAge)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		ids := apiIDs(t, dl)
		if slices.Equal(ids, []string{"1.9.0", "1.8.0"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("api.json once aged in (and past the 1 s TTLs): %v, want [1.9.0 1.8.0]", ids)
		}
	}
	if bin := latestStable(t, dl); !bytes.Equal(bin, tofuBinary(t, "1.9.0", "linux_amd64")) {
		t.Errorf("latest stable once aged in is not 1.9.0: %q", bin)
	}
	if n := tofuOriginGets(origin, "tofu_1.9.0_linux_amd64.tar.gz"); n != 1 {
		t.Errorf("the origin served 1.9.0's archive %d times, want once (the pull)", n)
	}
}

// waitTag waits (at most limit) until repository's tag exists.
func waitTag(t *testing.T, reg *testenv.Registry, repository, tag string, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); tagDigest(t, reg, repository, tag) == ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s:%s not written within %s", repository, tag, limit)
		}
	}
}

// Module pull-through under a module rule with min_age: the versions
// document is the registry's with the rule applied; listing the module
// pulls the origin's versions in the background (attested with the
// proxy's key: their first sight), a download of a version not held yet
// is 404 saying it is being fetched, and once they are old enough tofu
// installs the newest, from the registry, each version fetched from git
// once.
func TestPullThroughModulesMinAge(t *testing.T) {
	const minAge = 6 * time.Second
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	key, _ := ecdsaKeyPair(t)
	pol := factsPolicyFile(t, fmt.Sprintf(`module "*/acme/greeting/aws" {
  name    = "module-cool-down"
  min_age = "%s"
}`, minAge), nil)
	s := startServe(t, o.serveArgs(reg, "--policy", pol, "--attest-key", key, "--tag-ttl", "1s", "--resolve-ttl", "1s", "--failure-ttl", "1s")...)
	const versions = "/v1/modules/acme/greeting/aws/versions"
	if code, body := s.get(t, versions); strings.Contains(string(body), `"1.`) {
		t.Fatalf("versions before anything is held: %d %s", code, body)
	}
	code, body := s.get(t, "/v1/modules/acme/greeting/aws/1.1.0/download")
	if code != 404 || !strings.Contains(string(body), `is being fetched from its origin, and the policy's rule \"module-cool-down\" serves it`) {
		t.Fatalf("1.1.0's download before it is held: %d %s", code, body)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		waitTag(t, reg, "pulled/acme/greeting/aws", v, 30*time.Second)
	}
	if code, body := s.get(t, "/v1/modules/acme/greeting/aws/1.1.0/download"); code != 404 || !strings.Contains(string(body), "module-cool-down") {
		t.Errorf("1.1.0's download while too young: %d %s", code, body)
	}
	for deadline := time.Now().Add(5 * minAge); ; time.Sleep(250 * time.Millisecond) {
		_, body := s.get(t, versions)
		if strings.Contains(string(body), `"1.1.0"`) && strings.Contains(string(body), `"1.0.0"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versions once aged in: %s", body)
		}
	}
	cfg := map[string]string{"main.tf": fmt.Sprintf("module \"g\" {\n  source  = \"%s/acme/greeting/aws\"\n  version = \"~> 1.0\"\n}\n", moduleHost(s))}
	if out := testenv.Tofu(t, "").Run(t, testenv.WriteConfig(t, cfg), "init", "-input=false", "-no-color"); !strings.Contains(out, "acme/greeting/aws 1.1.0 for g") {
		t.Fatalf("not installed once aged in:\n%s", out)
	}
	if n := o.git.UploadPacks(); n != 2 {
		t.Errorf("%d git fetches, want 2 (one per version, at first sight)", n)
	}
}
