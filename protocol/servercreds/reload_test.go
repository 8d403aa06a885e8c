package servercreds

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate for name and its key.
func writePair(t *testing.T, dir, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cert.pem")
	cert, err := SelfSigned([]string{name}, out)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM = pemKey(t, cert)
	return certPEM, keyPEM
}

func TestReloaderFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(cert, key []byte) {
		t.Helper()
		// A rename replaces each file, as an atomic writer does.
		for f, b := range map[string][]byte{certFile: cert, keyFile: key} {
			if err := os.WriteFile(f+".new", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f+".new", f); err != nil {
				t.Fatal(err)
			}
		}
	}
	c1, k1 := writePair(t, dir, "one.example")
	write(c1, k1)
	r, err := NewReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	r.now = func() time.Time { return now }
	var reloads []error
	r.OnReload = func(err error) { reloads = append(reloads, err) }
	name := func() string {
		t.Helper()
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.DNSNames[0]
	}
	if name() != "one.example" {
		t.Fatal("not serving the first pair")
	}
	c2, k2 := writePair(t, dir, "two.example")
	write(c2, k2)
	if got := name(); got != "one.example" {
		t.Errorf("files looked at again within the interval: %s", got)
	}
	now = now.Add(DefaultReloadInterval)
	if got := name(); got != "two.example" || len(reloads) != 1 || reloads[0] != nil {
		t.Errorf("after the interval: serving %s, reloads %v", got, reloads)
	}
	write(c1, k2) // mismatched
	now = now.Add(DefaultReloadInterval)
	if got := name(); got != "two.example" || len(reloads) != 2 || reloads[1] == nil {
		t.Errorf("a broken pair: serving %s, reloads %v", got, reloads)
	}
	now = now.Add(DefaultReloadInterval)
	name() // unchanged files are not read again
	if len(reloads) != 2 {
		t.Errorf("unchanged broken files read again: %v", reloads)
	}
	os.Remove(keyFile)
	now = now.Add(DefaultReloadInterval)
	if got := name(); got != "two.example" || len(reloads) != 3 || !errors.As(reloads[2], new(*FileError)) {
		t.Errorf("a missing key: serving %s, reloads %v", got, reloads)
	}
	// The certificate served is usable while it is valid; once expired it
	// is not, and the failed reload is named.
	leaf := r.Certificate().Leaf
	if err := r.Usable(leaf.NotAfter.Add(-time.Minute)); err != nil {
		t.Errorf("a valid certificate: %v", err)
	}
	if err := r.Usable(leaf.NotAfter.Add(time.Second)); err == nil || !strings.Contains(err.Error(), "expired at") || !strings.Contains(err.Error(), "last reload failed") {
		t.Errorf("an expired certificate after a failed reload: %v", err)
	}
	if err := r.Usable(leaf.NotBefore.Add(-time.Hour)); err == nil || !strings.Contains(err.Error(), "not valid before") {
		t.Errorf("a certificate not valid yet: %v", err)
	}
	write(c1, k1)
	now = now.Add(DefaultReloadInterval)
	name()
	if err := r.Usable(r.Certificate().Leaf.NotAfter.Add(time.Second)); err == nil || strings.Contains(err.Error(), "last reload failed") || !strings.Contains(err.Error(), certFile) {
		t.Errorf("an expired certificate that loaded: %v", err)
	}
}

// pemKey is cert's ECDSA private key in PEM.
func pemKey(t *testing.T, cert tls.Certificate) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
