package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// serve --archive-delivery redirect before a registry whose blob downloads
// redirect to storage elsewhere: tofu (network mirror and registry
// protocol) and terraform (registry protocol; Terraform 1.11 sends HEAD
// first) install from the storage, the proxy streams no archive byte, the
// storage sees GETs only (the proxy answers HEAD itself) and never a
// registry credential.
func TestRedirectDelivery(t *testing.T) {
	const user, pass = "deliver", "s3cret-Redirect"
	reg := testenv.StartRegistryWithAuth(t, user, pass)
	creds := []string{"OCI_TOFU_USERNAME=" + user, "OCI_TOFU_PASSWORD=" + pass}
	env := append(os.Environ(), append([]string{"SSL_CERT_FILE=" + reg.CA.CertFile, "DOCKER_CONFIG=" + t.TempDir()}, creds...)...)
	testenv.MustRun(t, "", env, ociTofu, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/test/hello")
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Redirect: testenv.RedirectOtherHost})
	s := startServeEnv(t, creds, "--provider-template", front.Host+"/providers/${namespace}/${type}", "--archive-delivery", "redirect")

	installsOnly(t, s, "~> 1.0", "1.0.0", "")

	got := front.Redirects.Requests()
	if len(got) < 3 {
		t.Errorf("the storage served %d requests; want the three installs' downloads", len(got))
	}
	for _, r := range got {
		if r.Method != http.MethodGet {
			t.Errorf("the storage got %s %s: presigned GET URLs refuse it", r.Method, r.Path)
		}
	}
	if leaked := front.Redirects.WithAuthorization(); len(leaked) != 0 {
		t.Errorf("a registry credential reached the storage: %+v", leaked)
	}
	_, metrics := s.get(t, "/metrics")
	if m := string(metrics); !strings.Contains(m, "oci_tofu_proxy_archive_bytes_streamed_total 0\n") || strings.Contains(m, "oci_tofu_proxy_archive_redirects_total 0\n") {
		t.Errorf("want no archive byte streamed and the downloads redirected:\n%s", grep(m, "oci_tofu_proxy_archive"))
	}
	if strings.Contains(s.logs.String(), pass) {
		t.Error("the registry password appears in the proxy's log")
	}
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
