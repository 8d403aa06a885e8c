package respond

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The TLS certificate's metrics: its reloads and when it expires.

// ObserveCertificateReload counts a change of the TLS certificate files:
// err is nil when the new pair is served, the reason it was refused
// otherwise (servercreds.Reloader's OnReload).
func (m *Metrics) ObserveCertificateReload(err error) {
	result := "reloaded"
	if err != nil {
		result = "failed"
	}
	m.tlsReloads.WithLabelValues(result).Inc()
}

// ObserveCertificateExpiry serves when the TLS certificate served
// expires, as oci_tofu_proxy_tls_certificate_not_after_timestamp_seconds
// (notAfter is asked on each scrape): the alert for a certificate about
// to expire, which readiness deliberately leaves alone until it has
// (docs/proxy.md, "Probes"). Called once, by serve.
func (m *Metrics) ObserveCertificateExpiry(notAfter func() time.Time) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "oci_tofu_proxy_tls_certificate_not_after_timestamp_seconds",
		Help: "When the TLS certificate served expires (Unix time); readiness fails once it has.",
	}, func() float64 { return float64(notAfter().Unix()) }))
}
