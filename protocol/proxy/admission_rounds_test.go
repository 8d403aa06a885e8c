package proxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// With --require-attestation, a cold <version>.json or download document
// waits at most one round trip more than without: the attestation — its
// bundle referrers (the listing, then their manifests at once, then their
// layers) and its .att manifest, then its layer — is read beside the
// provenance and the platform manifests, not after them. 1.0.0 carries
// both forms (Attach), 1.1.0 a bundle alone. Counted at a front 50 ms
// away.
func TestRequireAttestationRoundTrips(t *testing.T) {
	reg := testenv.StartRegistry(t)
	s := attesttest.Signer(t)
	pushAttested(t, registryRepo(t, reg, "p/test/hello"), "1.0.0", s)
	pushBundleAttested(t, registryRepo(t, reg, "p/test/hello"), "1.1.0", s) // cosign v3's way
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Latency: 50 * time.Millisecond})
	upstream, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	mappings := mustMapping(t, front.Host+"/p/${namespace}/${type}")
	// rounds is the sequential round trips a fresh proxy takes for u.
	rounds := func(t *testing.T, keys []*attest.Verifier, u string) (int, int) {
		t.Helper()
		p := startProxy(t, Options{Client: upstream, ProviderMappings: mappings, RequireAttestation: keys})
		front.ResetLog()
		p.getJSON(t, u, http.StatusOK, nil)
		return front.Rounds(), len(front.Log())
	}
	for _, u := range []string{
		"/v1/mirror/example.com/test/hello/1.0.0.json",
		"/v1/providers/test/hello/1.0.0/download/linux/amd64",
		"/v1/mirror/example.com/test/hello/1.1.0.json",
	} {
		plain, plainRequests := rounds(t, nil, u)
		attested, attestedRequests := rounds(t, []*attest.Verifier{s.Public()}, u)
		t.Logf("%s: %d round trips (%d requests) without the policy, %d (%d requests) with it", u, plain, plainRequests, attested, attestedRequests)
		if attested > plain+1 {
			t.Errorf("%s: %d sequential round trips with --require-attestation, %d without: want at most one more", u, attested, plain)
		}
	}
}
