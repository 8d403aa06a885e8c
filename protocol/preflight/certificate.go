package preflight

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"
)

// expiresSoon is how close to its expiry a certificate is worth a warning.
const expiresSoon = 14 * 24 * time.Hour

// Certificate checks the server certificate loaded from file at now: ok
// with the names it is valid for and until when, a warning when it
// expires within two weeks, an error when it has expired or cannot be
// parsed.
func Certificate(cert tls.Certificate, file string, now time.Time) Result {
	res := Result{Target: TLSTarget}
	if len(cert.Certificate) == 0 {
		res.Status, res.Detail = StatusError, "reading the TLS certificate: no certificate"
		return res
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		res.Status, res.Detail = StatusError, "reading the TLS certificate: "+err.Error()
		return res
	}
	res.Mapping = file
	res.Status = StatusOK
	res.Detail = fmt.Sprintf("valid for %s until %s", strings.Join(certifiedNames(leaf), ", "), leaf.NotAfter.UTC().Format(time.DateOnly))
	if leaf.NotAfter.Sub(now) < expiresSoon {
		res.Status = StatusWarning
		res.Detail += " (expires within two weeks)"
	}
	if now.After(leaf.NotAfter) {
		res.Status, res.Detail = StatusError, "the certificate expired on "+leaf.NotAfter.UTC().Format(time.DateOnly)
	}
	return res
}

// certifiedNames are the DNS names, then the IP addresses, a certificate
// is valid for.
func certifiedNames(c *x509.Certificate) []string {
	out := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}
