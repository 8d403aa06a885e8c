package e2e

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// mirror --attest-key attests each provider release it copies from its
// origin (predicate from the verified origin release: signature
// "verified", the publisher's key, SHA256SUMS): a version mirrored before
// without a key is verified again and attested; a re-run skips both.
// cosign accepts the signatures and attestations.
func TestAttestMirrorProvidersVerifiedByCosign(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	tpl := reg.Host + "/mirror/${namespace}/${type}"
	addr := origin.Host + "/test/hello"
	mustRun(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", addr+"@= 1.0.0")
	repo := reg.Host + "/mirror/test/hello"
	verifyRefused(t, "mirrored without a key", pub, repo)

	out := mustRun(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", "--attest-key", key, addr+"@~> 1.0")
	for _, want := range []string{"complete " + addr + " 1.0.0", "mirrored " + addr + " 1.1.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "signed and attested") != 2 {
		t.Errorf("both versions must be attested:\n%s", out)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		d := resolveDigest(t, reg, "mirror/test/hello", v)
		ref := repo + "@" + d
		var p release.ProviderPredicate
		if got := attested(t, pub, ref, release.ProviderPredicateType, &p); got != d {
			t.Errorf("%s: subject %s, want %s", v, got, d)
		}
		if p.Type != "hello" || p.Version != v || p.Signature != "verified" || len(p.KeyIDs) != 1 || len(p.KeyFingerprints) != 1 ||
			p.SHA256SUMS == nil || p.SHA256SUMSSig == nil || len(p.Platforms) != 1 || p.Platforms["linux_amd64"].ZH != "zh:"+fixtureZipSHA(t, v, "linux_amd64") ||
			!strings.HasPrefix(p.Platforms["linux_amd64"].H1, "h1:") || p.Verifier.Name != "oci-tofu" {
			t.Errorf("%s: predicate %+v", v, p)
		}
	}
	mustRun(t, "verify", "--attest-pub", pub, repo)

	again := mustRun(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", "--attest-key", key, addr+"@~> 1.0")
	if strings.Count(again, "complete ") != 2 || strings.Contains(again, "signed and attested") {
		t.Errorf("re-run must skip attested versions:\n%s", again)
	}
}

// mirror --tofu-repository --attest-key attests each OpenTofu release
// (predicate tofu-release/v1); cosign accepts it.
func TestAttestMirrorTofuVerifiedByCosign(t *testing.T) {
	reg := testenv.StartRegistry(t)
	source := reg.Host + "/upstream/tofu"
	pushTofu(t, source, "1.9.0")
	s := startServe(t, "--tofu-repository", source)
	key, pub := ecdsaKeyPair(t)
	target := reg.Host + "/mirrored/tofu"
	out := mustRun(t, "mirror", "--tofu-repository", target, "--tofu-api-url", s.URL+"/tofu/api.json",
		"--tofu-download-url", s.URL+"/tofu/download/v{{ .Version }}/{{ .Artifact }}",
		"--tofu-key", testenv.Testdata(t, "keys", "gpg-signer.asc"), "--tofu-versions", "1.9.0", "--attest-key", key)
	if !strings.Contains(out, "mirrored opentofu 1.9.0") || !strings.Contains(out, "signed and attested") {
		t.Fatalf("mirror --attest-key:\n%s", out)
	}
	d := resolveDigest(t, reg, "mirrored/tofu", "1.9.0")
	ref := target + "@" + d
	var p release.TofuPredicate
	if got := attested(t, pub, ref, release.TofuPredicateType, &p); got != d {
		t.Errorf("subject %s, want %s", got, d)
	}
	if p.Version != "1.9.0" || p.Repository != target || len(p.KeyIDs) != 1 || p.SHA256SUMS == nil || p.SHA256SUMSSig == nil || len(p.Files) == 0 {
		t.Errorf("predicate %+v", p)
	}
	attestRefusals(t, pub, ref, release.TofuPredicateType)
}
