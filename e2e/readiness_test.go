package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// kubeletProbe gets path as the kubelet's HTTPS probe does: a new
// connection each time, the certificate not verified (an expired one
// included).
func kubeletProbe(t *testing.T, host, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get("https://" + host + path)
	if err != nil {
		t.Fatalf("probe %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// Readiness follows the TLS certificate served: a renewal that loads
// keeps the replica ready; once the certificate served has expired the
// replica is not ready (clients refuse it), the more so when the files'
// last reload failed, which the reason names; a valid renewal makes it
// ready again. Liveness does not follow.
func TestReadinessFollowsTheCertificateServed(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	ca := testenv.NewCA(t)
	vol := &secretVolume{dir: t.TempDir()}
	cert1, key1 := ca.IssueServer(t, 2001, "oci-tofu readiness 1")
	vol.write(t, map[string][]byte{"tls.crt": cert1, "tls.key": key1})
	port := testenv.FreePort(t)
	cmd := exec.Command(ociTofu, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", filepath.Join(vol.dir, "tls.crt"), "--tls-key", filepath.Join(vol.dir, "tls.key"),
		"--provider-template", reg.Host+"/providers/${namespace}/${type}")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+t.TempDir())
	s := launchServe(t, cmd, port)
	waitUntil(t, 30*time.Second, "/readyz 200", func() bool { code, _ := kubeletProbe(t, s.Host, "/readyz"); return code == 200 })

	// A renewal that expires shortly (a certificate that cert-manager
	// then fails to renew).
	cert2, key2 := ca.IssueServerUntil(t, 2002, "oci-tofu readiness 2", time.Now().Add(5*time.Second))
	vol.write(t, map[string][]byte{"tls.crt": cert2, "tls.key": key2})
	waitUntil(t, 30*time.Second, "serial 2002 served", func() bool { return leafSerialUnverified(t, s.Host) == "2002" })
	cert3, _ := ca.IssueServer(t, 2003, "oci-tofu readiness broken")
	vol.write(t, map[string][]byte{"tls.crt": cert3, "tls.key": key1}) // the key does not match
	var body string
	waitUntil(t, 30*time.Second, "/readyz 503 once the certificate served expired", func() bool {
		var code int
		code, body = kubeletProbe(t, s.Host, "/readyz")
		return code == 503
	})
	if !strings.Contains(body, "tls certificate: the certificate served expired at") || !strings.Contains(body, "last reload failed") {
		t.Errorf("/readyz reason: %q", body)
	}
	if code, _ := kubeletProbe(t, s.Host, "/livez"); code != 200 {
		t.Errorf("/livez with an expired certificate: %d", code)
	}
	cert4, key4 := ca.IssueServer(t, 2004, "oci-tofu readiness 4")
	vol.write(t, map[string][]byte{"tls.crt": cert4, "tls.key": key4})
	waitUntil(t, 30*time.Second, "/readyz 200 with a renewed certificate", func() bool {
		code, _ := kubeletProbe(t, s.Host, "/readyz")
		return code == 200
	})
	if got := leafSerial(t, ca, s.Host); got != "2004" {
		t.Errorf("serving serial %s, want 2004", got)
	}
	block, _ := pem.Decode(cert4)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := strconv.ParseFloat(metric(t, s, "oci_tofu_proxy_tls_certificate_not_after_timestamp_seconds"), 64)
	if err != nil || int64(got) != leaf.NotAfter.Unix() {
		t.Errorf("certificate expiry metric %v (%v), want %d", got, err, leaf.NotAfter.Unix())
	}
}

// leafSerialUnverified is the serial of the certificate a new
// connection is shown, valid or not.
func leafSerialUnverified(t *testing.T, host string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("a new connection: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}
