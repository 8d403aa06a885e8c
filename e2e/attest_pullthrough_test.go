package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// serve --attest-key with pull-through and --require-attestation of the
// same key: tofu installs a provider pulled through on first use, the
// release stored carries an attestation cosign accepts, and a fresh
// install is served from the registry, admitted.
func TestAttestPullThroughVerifiedByCosign(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	s := startServe(t, pullThroughArgs(reg, origin, "--attest-key", key, "--require-attestation", pub)...)
	install := func() string {
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.1.0")})
		out := testenv.Tofu(t, networkMirrorConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
		if !strings.Contains(out, "Installed example.com/test/hello v1.1.0") {
			t.Fatalf("not installed:\n%s", out)
		}
		return out
	}
	install()
	d := waitForTag(t, reg, "pulled/example.com/test/hello", "1.1.0")
	ref := reg.Host + "/pulled/example.com/test/hello@" + d
	var p release.ProviderPredicate
	if got := attested(t, pub, ref, release.ProviderPredicateType, &p); got != d {
		t.Errorf("subject %s, want %s", got, d)
	}
	if p.Version != "1.1.0" || p.Signature != "verified" || len(p.Platforms) != len(helloPlatforms) || p.SHA256SUMS == nil {
		t.Errorf("predicate %+v", p)
	}
	waitForLog(t, s, "attested it")
	install() // from the registry now, through admission
}
