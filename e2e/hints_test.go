package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// runWith runs oci-tofu with extra environment (which wins) and stdin.
func runWith(t *testing.T, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ociTofu, args...)
	cmd.Env = append(append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+t.TempDir()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// otherCA writes the certificate of a CA that signed nothing we serve.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "some other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every common failure ends with one line saying what to do, whatever the
// command: each case is a real failure against a real peer.
func TestErrorHints(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	authReg := testenv.StartRegistryWithAuth(t, "hint-user", "hint-Pa55")
	plain := testenv.StartPlainHTTPRegistry(t)
	release := testenv.Testdata(t, "providers", "hello", "1.0.0")
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	mustRun(t, "push", "provider", "--quiet", "--key", key, release, reg.Host+"/providers/test/hello")
	throttled := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Fault: testenv.TooManyRequests(time.Minute)}}})
	denying := testenv.StartFrontFor(t, reg, testenv.FrontOptions{DenyMissing: 403})
	emptyTrust := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(emptyTrust, nil, 0o644)

	for _, tc := range []struct {
		name  string
		env   []string
		stdin string
		args  []string
		hint  string
		not   string // must not appear
	}{
		{name: "template emptied by the shell's double quotes", args: []string{"serve", "--insecure-no-tls", "--provider-template", "ghcr.io/acme//"},
			hint: "hint: the template has no ${…} left: a shell replaces them (with nothing) inside double quotes; put the template in single quotes"},
		{name: "template lacking one placeholder", args: []string{"serve", "--insecure-no-tls", "--provider-template", "ghcr.io/acme/${type}"},
			hint: "must use ${namespace}", not: "double quotes"},
		{name: "credentials missing (push)", args: []string{"push", "provider", "--key", key, release, authReg.Host + "/p/test/hello"},
			hint: "hint: the registry wants credentials: run `docker login " + authReg.Host + "`"},
		{name: "credentials missing (verify)", args: []string{"verify", authReg.Host + "/p/test/hello:1.0.0"},
			hint: "hint: the registry wants credentials", not: "OpenTofu would fail"},
		{name: "credentials wrong", stdin: "wrong", args: []string{"verify", "--username", "hint-user", "--password-stdin", authReg.Host + "/p/test/hello:1.0.0"},
			hint: "hint: the registry refused these credentials"},
		{name: "username without password", args: []string{"verify", "--username", "hint-user", authReg.Host + "/p/test/hello:1.0.0"},
			hint: "was given without a password: pipe it to --password-stdin, or set OCI_TOFU_PASSWORD"},
		{name: "plain HTTP registry", args: []string{"verify", plain + "/p/test/hello:1.0.0"},
			hint: "hint: the registry speaks plain HTTP: add --plain-http"},
		{name: "--plain-http against TLS", args: []string{"pull", "module", "--plain-http", reg.Host + "/modules/x:1.0.0", filepath.Join(t.TempDir(), "m")},
			hint: "drop --plain-http"},
		{name: "untrusted CA", env: []string{"SSL_CERT_FILE=" + emptyTrust}, args: []string{"verify", reg.Host + "/providers/test/hello:1.0.0"},
			hint: "hint: the registry's certificate is not trusted: pass --ca-file CA.pem"},
		{name: "wrong --ca-file", env: []string{"SSL_CERT_FILE=" + emptyTrust}, args: []string{"verify", "--ca-file", otherCA(t), reg.Host + "/providers/test/hello:1.0.0"},
			hint: "not signed by the CA in --ca-file"},
		{name: "missing repository", args: []string{"pull", "module", reg.Host + "/modules/nosuch:1.0.0", filepath.Join(t.TempDir(), "m")},
			hint: "hint: nothing there: check the repository name and tag, or push it first"},
		{name: "wrong template", args: []string{"export", "--provider-template", reg.Host + "/wrong/${namespace}/${type}", t.TempDir(), "example.com/test/hello"},
			hint: "hint: nothing there: check the repository --provider-template names"},
		{name: "wrong key", args: []string{"push", "provider", "--key", testenv.Testdata(t, "keys", "gocrypto-signer.asc"), release, reg.Host + "/providers/test/hello"},
			hint: "hint: the release was signed with another key: pass the publisher's public key with --key"},
		{name: "rate limited", args: []string{"verify", throttled.Host + "/providers/test/hello:1.0.0"},
			hint: "hint: the registry is rate-limiting"},
		{name: "denied", args: []string{"pull", "module", denying.Host + "/modules/nosuch:1.0.0", filepath.Join(t.TempDir(), "m")},
			hint: "hint: the registry refused this account access to the repository"},
		{name: "unreachable", args: []string{"verify", "localhost:1/p/test/hello:1.0.0"},
			hint: "hint: cannot connect to the registry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runWith(t, tc.env, tc.stdin, tc.args...)
			if code := exitCode(t, err); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if !strings.Contains(out, tc.hint) {
				t.Errorf("output lacks %q:\n%s", tc.hint, out)
			}
			if tc.not != "" && strings.Contains(out, tc.not) {
				t.Errorf("output has %q:\n%s", tc.not, out)
			}
			if n := strings.Count(out, "hint:"); n > 1 {
				t.Errorf("%d hints, want one line:\n%s", n, out)
			}
		})
	}
}
