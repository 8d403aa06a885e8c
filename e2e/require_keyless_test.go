package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/sigstoretest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

const (
	ghIssuer        = "https://token.actions.githubusercontent.com"
	releaseWorkflow = "https://github.com/acme/infra/.github/workflows/release.yml@refs/heads/main"
	forkWorkflow    = "https://github.com/mallory/infra/.github/workflows/release.yml@refs/heads/main"
)

// serve --require-attestation keyless:ISSUER=IDENTITY --trusted-root (and
// verify --attest-pub keyless:…): of
// two provider versions, each with a keyless attestation (a Sigstore
// bundle stored as a referrer of its index by regctl, in the referrers
// tag schema Distribution needs), the one signed by the required CI
// identity is served; the other, signed by another identity under the
// same issuer, does not exist for clients, and the refusal says why. The
// real cosign, given the same trusted root and identity, agrees.
func TestRequireKeylessAttestation(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.0.0", "1.1.0")
	sig := sigstoretest.New(t)
	env := append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile)
	digests := map[string]string{}
	for v, identity := range map[string]string{"1.0.0": releaseWorkflow, "1.1.0": forkWorkflow} {
		d := trimSpace(testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "digest", repo+":"+v))
		digests[v] = d
		attachBundle(t, env, repo+"@"+d, sig.Attest(t, ghIssuer, identity, providerStatement(t, repo, d), sigstoretest.Opts{}))
	}
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
		"--require-attestation", "keyless:"+ghIssuer+"="+releaseWorkflow, "--trusted-root", sig.Root)

	if code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); code != 200 {
		t.Errorf("1.0.0.json (attested by %s): %d %s", releaseWorkflow, code, body)
	}
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
	if code != 404 || !strings.Contains(string(body), "expected SAN value") {
		t.Errorf("1.1.0.json (attested by %s): %d %s", forkWorkflow, code, body)
	}
	code, body = s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || strings.Contains(string(body), "1.1.0") || !strings.Contains(string(body), "1.0.0") {
		t.Errorf("index.json: %d %s", code, body)
	}

	cosignKeyless := func(v string) (string, error) {
		return cosign(t, "verify-attestation", "--trusted-root", sig.Root, "--certificate-oidc-issuer", ghIssuer,
			"--certificate-identity", releaseWorkflow, "--insecure-ignore-sct",
			"--type", release.ProviderPredicateType, repo+"@"+digests[v])
	}
	if out, err := cosignKeyless("1.0.0"); err != nil {
		t.Errorf("cosign verify-attestation refuses what serve admits: %v\n%s", err, out)
	}
	out, err := cosignKeyless("1.1.0")
	refused(t, "cosign, another identity", out, err, "expected SAN value")

	// oci-tofu verify --attest-pub keyless:… agrees.
	identity := "keyless:" + ghIssuer + "=" + releaseWorkflow
	out = mustRun(t, "verify", "--skip-zips", "--attest-pub", identity, "--trusted-root", sig.Root, repo+":1.0.0")
	wantLine(t, out, "ok", "is attested ("+release.ProviderPredicateType+") keylessly by "+ghIssuer+"="+releaseWorkflow)
	out, err = run(t, "verify", "--skip-zips", "--attest-pub", identity, "--trusted-root", sig.Root, repo+":1.1.0")
	if err == nil {
		t.Errorf("verify passed 1.1.0, attested by another identity:\n%s", out)
	}
	wantLine(t, out, "error", "keyless "+ghIssuer+"="+releaseWorkflow+": keyless attestation refused")
}

// TestRequireKeylessStartUp: keyless identities need a trusted root, and
// a trusted root needs a keyless identity; a bad identity is refused.
func TestRequireKeylessStartUp(t *testing.T) {
	root := sigstoretest.New(t).Root
	base := []string{"serve", "--check", "--provider-template", "oci-layout:" + t.TempDir() + "/${namespace}/${type}"}
	for what, c := range map[string]struct {
		args []string
		want string
	}{
		"no trusted root": {[]string{"--require-attestation", "keyless:" + ghIssuer + "=" + releaseWorkflow}, "needs --trusted-root"},
		"no identity":     {[]string{"--trusted-root", root}, "--trusted-root is for --require-attestation keyless"},
		"bad identity":    {[]string{"--require-attestation", "keyless:" + releaseWorkflow, "--trusted-root", root}, "write ISSUER=IDENTITY"},
		"bad root":        {[]string{"--require-attestation", "keyless:" + ghIssuer + "=" + releaseWorkflow, "--trusted-root", filepath.Join(testenv.Root(t), "go.mod")}, "not a Sigstore trusted root"},
	} {
		out, err := run(t, append(base, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: %v, want a refusal saying %q:\n%s", what, err, c.want, out)
		}
	}
}

// providerStatement is an in-toto statement about the provider index d
// with push provider's predicate type.
func providerStatement(t *testing.T, repo, d string) []byte {
	t.Helper()
	b, err := json.Marshal(attest.Statement{
		Type:          attest.StatementType,
		Subject:       []attest.Subject{{Name: repo, Digest: map[string]string{"sha256": strings.TrimPrefix(d, "sha256:")}}},
		PredicateType: release.ProviderPredicateType,
		Predicate:     json.RawMessage(`{"signature":"verified"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// attachBundle stores a Sigstore bundle as a referrer of subject with
// regctl (the referrers API where the registry has it, else the tag
// schema), as cosign v3 stores keyless attestations.
func attachBundle(t *testing.T, env []string, subject string, bundle []byte) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(f, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	repo := subject[:strings.LastIndex(subject, "@")]
	testenv.MustRun(t, filepath.Dir(f), env, testenv.Tool(t, "regctl"), "artifact", "put", "--subject", subject,
		"--artifact-type", sigstoretest.BundleMediaType, "--file", "bundle.json", "--file-media-type", sigstoretest.BundleMediaType, repo)
}
