package servercreds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
)

// The files a FileError can be about.
const (
	CertificateFile = "certificate"
	KeyFile         = "key"
)

// A FileError is a certificate or key file that could not be read.
type FileError struct {
	// Role is CertificateFile or KeyFile.
	Role string
	Err  error
}

func (e *FileError) Error() string { return "reading the TLS " + e.Role + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// LoadCertificate reads a PEM certificate (chain) and its private key:
// regular files of at most oci.MaxSmallFile bytes. A file that cannot be
// read is a *FileError.
func LoadCertificate(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := localfile.ReadBounded(certFile, oci.MaxSmallFile)
	if err != nil {
		return tls.Certificate{}, &FileError{Role: CertificateFile, Err: err}
	}
	keyPEM, err := localfile.ReadBounded(keyFile, oci.MaxSmallFile)
	if err != nil {
		return tls.Certificate{}, &FileError{Role: KeyFile, Err: err}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the TLS certificate: %w", err)
	}
	return cert, nil
}

// SelfSigned makes a throw-away certificate (ECDSA P-256, valid for 30
// days) for hosts, host names or IP addresses, and writes the certificate
// to certOut in PEM for clients to trust. For trials only.
func SelfSigned(hosts []string, certOut string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl, err := selfSignedTemplate(hosts)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certOut, certPEM, 0o644); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing the self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

// selfSignedTemplate is a CA certificate for serving hosts: IP addresses
// become IP SANs, anything else (but "") DNS names.
func selfSignedTemplate(hosts []string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "oci-tofu self-signed"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl, nil
}

// ServerConfig is the TLS configuration the server listens with: cert,
// TLS 1.2 or later, HTTP/2 offered.
func ServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
}
