package servercreds_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/servercreds"
)

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A self-signed certificate names its hosts, is written for clients, and
// loads back from its files like any other.
func TestSelfSignedThenLoad(t *testing.T) {
	out := filepath.Join(t.TempDir(), "self.pem")
	cert, err := servercreds.SelfSigned([]string{"localhost", "127.0.0.1", ""}, out)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "localhost" || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal([]byte{127, 0, 0, 1}) {
		t.Errorf("names %v, IPs %v", leaf.DNSNames, leaf.IPAddresses)
	}
	written, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(written), "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("written certificate: %v %q", err, written)
	}
	cfg := servercreds.ServerConfig(cert)
	if cfg.MinVersion != tls.VersionTLS12 || len(cfg.Certificates) != 1 {
		t.Errorf("config: %+v", cfg)
	}
}

// A file that cannot be read says which one it is; a FIFO is refused,
// not waited on.
func TestLoadCertificateSaysWhichFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	cert := write(t, "cert.pem", "not PEM")
	for _, tc := range []struct {
		cert, key, role string
	}{
		{filepath.Join(dir, "missing.pem"), cert, servercreds.CertificateFile},
		{cert, fifo, servercreds.KeyFile},
	} {
		_, err := servercreds.LoadCertificate(tc.cert, tc.key)
		var fe *servercreds.FileError
		if !errors.As(err, &fe) || fe.Role != tc.role {
			t.Errorf("LoadCertificate(%s, %s) = %v, want a FileError about the %s", tc.cert, tc.key, err, tc.role)
		}
	}
	_, err := servercreds.LoadCertificate(cert, cert)
	var fe *servercreds.FileError
	if err == nil || errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "loading the TLS certificate: ") {
		t.Errorf("bad PEM: %v", err)
	}
}

func TestReadTokens(t *testing.T) {
	tokens, err := servercreds.ReadTokens(write(t, "t", "# operators\n\n  0123456789abcdef  \nfedcba9876543210fedc\n"))
	if err != nil || len(tokens) != 2 || tokens[0] != "0123456789abcdef" {
		t.Errorf("tokens %q, %v", tokens, err)
	}
	for content, want := range map[string]string{
		"short\n":    "tokens must have at least 16 characters",
		"# only\n\n": "holds no token",
		"":           "holds no token",
	} {
		if _, err := servercreds.ReadTokens(write(t, "t", content)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
}

func TestReadURLSigningKey(t *testing.T) {
	if key, err := servercreds.ReadURLSigningKey(write(t, "k", " 0123456789abcdef\n")); err != nil || string(key) != "0123456789abcdef" {
		t.Errorf("key %q, %v", key, err)
	}
	if _, err := servercreds.ReadURLSigningKey(write(t, "k", "short")); err == nil || !strings.Contains(err.Error(), "at least 16 bytes") {
		t.Errorf("short key: %v", err)
	}
	if _, err := servercreds.ReadURLSigningKey(write(t, "k", strings.Repeat("k", servercreds.MaxURLSigningKeyFile+1))); err == nil {
		t.Error("an oversized key file was read")
	}
}

// The lines net/http writes for failed handshakes are logged with a hint
// when the client does not trust the certificate (Go clients say "bad
// certificate", curl's OpenSSL ends in "bad record MAC"); other lines pass
// unchanged.
func TestHandshakeLog(t *testing.T) {
	for line, want := range map[string]string{
		"http: TLS handshake error from 127.0.0.1:33686: remote error: tls: bad certificate": `hint="the client does not trust`,
		"http: TLS handshake error from 127.0.0.1:33702: local error: tls: bad record MAC":   `hint="the client does not trust`,
		"http: TLS handshake error from 127.0.0.1:33703: EOF":                                `msg="TLS handshake failed" remote=127.0.0.1:33703 error=EOF`,
		"http: superfluous response.WriteHeader call from example.com/x.go:1":                `msg="http: superfluous`,
	} {
		var b bytes.Buffer
		servercreds.HandshakeLog(slog.New(slog.NewTextHandler(&b, nil))).Print(line)
		if got := b.String(); !strings.Contains(got, want) || !strings.Contains(got, "level=WARN") {
			t.Errorf("%s:\n got %s\nwant %s", line, got, want)
		}
		if strings.HasSuffix(line, "EOF") && strings.Contains(b.String(), "hint=") {
			t.Errorf("a hint for a plain EOF: %s", b.String())
		}
	}
}
