// Package testenv runs the real peers that oci-tofu's integration and
// end-to-end tests talk to: OCI registries over TLS (CNCF Distribution v3,
// with htpasswd or token authentication, Distribution 2.8 from Debian,
// go-containerregistry's registry), fronts that put real registries'
// manners before them (latency, redirects, paging, denials, throttling,
// faults), the OpenTofu CLI and Terraform. `make tools` builds the Go peers
// into .tools/; `make tools-apt` installs the Debian ones.
package testenv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Root is the module root (the directory holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !strings.Contains(dir, string(filepath.Separator)+"tools") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root not found")
		}
		dir = parent
	}
}

// Tool returns the path of a tool built by `make tools`; the test fails
// (it is not skipped) when it is missing, as `make test` builds it first.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(t), ".tools", "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s: run `make tools` (make test does)", name, p)
	}
	return p
}

// Testdata returns a path under the module's testdata directory.
func Testdata(t testing.TB, elem ...string) string {
	return filepath.Join(append([]string{Root(t), "testdata"}, elem...)...)
}

// CA is a throw-away certificate authority with one server certificate for
// 127.0.0.1, ::1 and localhost.
type CA struct {
	CertFile       string // the CA certificate (PEM): point SSL_CERT_FILE here
	ServerCertFile string
	ServerKeyFile  string
	Pool           *x509.CertPool
	ServerCert     tls.Certificate

	cert *x509.Certificate // the CA's own, and its key, to issue more
	key  *ecdsa.PrivateKey
}

var (
	caOnce sync.Once
	caVal  *CA
	caErr  error
)

// NewCA returns the process-wide test CA, creating it once.
func NewCA(t testing.TB) *CA {
	t.Helper()
	caOnce.Do(func() { caVal, caErr = makeCA() })
	if caErr != nil {
		t.Fatal(caErr)
	}
	return caVal
}

func makeCA() (*CA, error) {
	dir, err := os.MkdirTemp("", "oci-tofu-ca-")
	if err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "oci-tofu test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(48 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(48 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, err
	}
	ca := &CA{
		CertFile:       filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
		Pool:           x509.NewCertPool(),
		cert:           caCert,
		key:            caKey,
	}
	ca.Pool.AddCert(caCert)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	srvPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	for f, b := range map[string][]byte{ca.CertFile: caPEM, ca.ServerCertFile: srvPEM, ca.ServerKeyFile: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return nil, err
		}
	}
	if ca.ServerCert, err = tls.X509KeyPair(srvPEM, keyPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// IssueServer issues another server certificate for 127.0.0.1, ::1 and
// localhost, with the given serial number and common name (to tell
// certificates apart, as a rotation test does), and returns it and its
// new key in PEM.
func (ca *CA) IssueServer(t testing.TB, serial int64, commonName string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.IssueServerUntil(t, serial, commonName, time.Now().Add(48*time.Hour))
}

// IssueServerUntil is IssueServer with a certificate valid until notAfter.
func (ca *CA) IssueServerUntil(t testing.TB, serial int64, commonName string, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// HTTPClient trusts the test CA.
func (ca *CA) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}, Timeout: 60 * time.Second}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Run runs a command, returning its combined output. It is killed after
// five minutes: a deadline for a hung command, far beyond what the
// commands tests run take even on a loaded machine, except compiles
// (MustBuild).
func Run(t testing.TB, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	return runWithin(5*time.Minute, dir, env, name, args...)
}

// MustRun is Run that fails the test on a non-zero exit.
func MustRun(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := Run(t, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// MustBuild is MustRun for a command that compiles Go code (go build,
// tools/image): with a cold build cache on a loaded machine that can take
// many minutes, so it is killed only a minute before the test binary's
// own deadline (go test -timeout; 30 minutes without one), and then fails
// with its output rather than the binary's panic.
func MustBuild(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	limit := buildLimit(t)
	out, err := runWithin(limit, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s (killed after %s at the latest): %v\n%s", filepath.Base(name), strings.Join(args, " "), limit.Round(time.Second), err, out)
	}
	return out
}

// buildLimit is how long a build may run: until a minute before the test
// binary's deadline.
func buildLimit(t testing.TB) time.Duration {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			return max(time.Until(end)-time.Minute, time.Minute)
		}
	}
	return 30 * time.Minute
}

// runWithin runs a command, killed after limit, returning its combined
// output.
func runWithin(limit time.Duration, dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startLogged starts cmd with its standard output and error in a
// LockedBuffer, and returns that buffer and a channel closed once the
// process has exited (and been waited for).
func startLogged(t testing.TB, cmd *exec.Cmd) (*LockedBuffer, chan struct{}) {
	t.Helper()
	log := &LockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return log, done
}

// stopGracefully sends sig to a process startLogged started and waits for
// it to exit (done), killing it after grace.
func stopGracefully(cmd *exec.Cmd, done <-chan struct{}, sig os.Signal, grace time.Duration) {
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		cmd.Process.Kill()
		<-done
	}
}

// LockedBuffer collects a process's or server's log output; safe for
// concurrent writers.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
