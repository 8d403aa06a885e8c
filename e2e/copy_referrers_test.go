package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Copies keep what signs a release: `regctl image copy --referrers
// --digest-tags` from one Distribution to a second copies cosign's
// referrers (bundles, under the referrers tag schema) and its tag-schema
// .sig/.att; the real cosign verifies the copies, and real tofu installs
// through serve --require-attestation on the copy. `crane copy` of a
// tag drops them: on its copy the proxy serves nothing.
func TestCopiesKeepSignatures(t *testing.T) {
	src, dst := testenv.StartRegistry(t), testenv.StartRegistry(t)
	t.Setenv("COSIGN_PASSWORD", "test-password")
	ourKey, ourPub := ecdsaKeyPair(t)
	cosignKey, cosignPub := cosignKeyPair(t)
	from := src.Host + "/providers/test/hello"
	tagSchema := pushAttested(t, ourKey, from, "1.0.0") // oci-tofu: .sig/.att
	pushHello(t, from, "1.1.0")
	bundled := trimSpace(testenv.MustRun(t, "", copyEnv(t, src), testenv.Tool(t, "crane"), "digest", from+":1.1.0"))
	cosignSignAndAttest(t, cosignModes(t)["bundle"], cosignKey, from+"@"+bundled) // cosign v3: bundles

	env := copyEnv(t, src)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		testenv.MustRun(t, "", env, testenv.Tool(t, "regctl"), "image", "copy", "--referrers", "--digest-tags", from+":"+v, dst.Host+"/providers/test/hello:"+v)
		testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "copy", from+":"+v, dst.Host+"/crane/test/hello:"+v)
	}
	to := dst.Host + "/providers/test/hello"
	for ref, pub := range map[string]string{to + "@" + tagSchema: ourPub, to + "@" + bundled: cosignPub} {
		if out, err := cosignVerify(t, pub, ref); err != nil {
			t.Errorf("cosign verify %s on the copy: %v\n%s", ref, err, out)
		}
		if out, err := cosignVerifyAttestationType(t, pub, ref, release.ProviderPredicateType); err != nil {
			t.Errorf("cosign verify-attestation %s on the copy: %v\n%s", ref, err, out)
		}
	}
	if out, err := cosignVerify(t, cosignPub, dst.Host+"/crane/test/hello@"+bundled); err == nil {
		t.Errorf("cosign verified a crane copy, which should have dropped the referrers:\n%s", out)
	}

	require := []string{"--require-attestation", ourPub, "--require-attestation", cosignPub}
	s := startServe(t, append([]string{"--provider-template", dst.Host + "/providers/${namespace}/${type}"}, require...)...)
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || !strings.Contains(string(body), `"1.0.0"`) || !strings.Contains(string(body), `"1.1.0"`) {
		t.Errorf("index.json on the regctl copy: %d %s", code, body)
	}
	installsOnly(t, s, "~> 1.0", "1.1.0", "")

	dropped := startServe(t, append([]string{"--provider-template", dst.Host + "/crane/${namespace}/${type}"}, require...)...)
	if code, body := dropped.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json"); code != 404 || !strings.Contains(string(body), notAttestedWords) {
		t.Errorf("1.1.0.json on the crane copy: %d %s", code, body)
	}
}

// notAttestedWords is what the proxy says of a release the keys refuse.
const notAttestedWords = "no attestation verifying with the configured keys"

// copyEnv is an environment for crane and regctl talking to the test
// registries (one CA for all).
func copyEnv(t *testing.T, reg *testenv.Registry) []string {
	return append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
}
