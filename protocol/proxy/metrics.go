package proxy

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oci-tofu/oci-tofu/oci"
)

// metrics are the proxy's Prometheus metrics, on a registry of its own so
// that several servers (tests) can coexist in one process. Every label
// value comes from a closed set (handler names, a few methods, status
// classes, failure classes, cache names and results), so no client can
// make the number of series grow.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	cache         *prometheus.CounterVec
	bytesStreamed prometheus.Counter
	// archiveRedirects counts archives handed out as storage URLs.
	archiveRedirects prometheus.Counter
	upstreamErrs     *prometheus.CounterVec
	streamAborts     *prometheus.CounterVec
	etiquette        *prometheus.CounterVec
	throttleWait     prometheus.Counter
	tlsReloads       *prometheus.CounterVec
	policy           *policyMetrics // policy_metrics.go
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_requests_total", Help: "HTTP requests by handler, method (GET, HEAD or OTHER) and status class.",
		}, []string{"handler", "method", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oci_tofu_proxy_request_duration_seconds", Help: "Time to serve a request (archives: until the last byte).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"handler"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_cache_requests_total", Help: "Cache lookups by cache and result (hit, stale, miss, failure).",
		}, []string{"cache", "result"}),
		bytesStreamed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_archive_bytes_streamed_total", Help: "Archive bytes streamed to clients.",
		}),
		archiveRedirects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_archive_redirects_total", Help: "Archive downloads answered with a redirect to the registry's storage (--archive-delivery redirect).",
		}),
		upstreamErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_upstream_errors_total", Help: "Failures talking to the OCI registry, by class.",
		}, []string{"kind"}),
		streamAborts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_stream_aborts_total", Help: "Archive downloads aborted mid-stream, by reason.",
		}, []string{"reason"}),
		etiquette: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_upstream_throttling_total", Help: "Registry throttling seen and retries made, by event (throttled, retry, wait).",
		}, []string{"event"}),
		throttleWait: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_upstream_wait_seconds_total", Help: "Time requests to the registry waited for a free slot or a throttle to pass.",
		}),
		tlsReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_tls_certificate_reloads_total", Help: "Changes of the TLS certificate files seen, by result (reloaded, or failed: the previous certificate is kept).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.cache, m.bytesStreamed, m.archiveRedirects, m.upstreamErrs, m.streamAborts, m.etiquette, m.throttleWait, m.tlsReloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// upstreamError counts a failure class (oci.Failure's label).
func (m *metrics) upstreamError(kind string) {
	m.upstreamErrs.WithLabelValues(kind).Inc()
}

// etiquetteEvent counts what the registry etiquette did.
func (m *metrics) etiquetteEvent(e oci.Event) {
	switch e.Kind {
	case "throttled", "retry", "wait":
		m.etiquette.WithLabelValues(e.Kind).Inc()
	}
	if e.Kind == "wait" {
		m.throttleWait.Add(e.Wait.Seconds())
	}
}

// observeCache counts a cache lookup.
func (m *metrics) observeCache(name, result string) {
	m.cache.WithLabelValues(name, result).Inc()
}

func (m *metrics) observe(handler, method string, code int, d time.Duration) {
	m.requests.WithLabelValues(handler, methodLabel(method), statusClass(code)).Inc()
	m.latency.WithLabelValues(handler).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// methodLabel folds every method but GET and HEAD into OTHER.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return method
	}
	return "OTHER"
}

// statusClass is "2xx" … "5xx", or "aborted" for a response cut off.
func statusClass(code int) string {
	switch {
	case code >= 200 && code < 300:
		return "2xx"
	case code >= 300 && code < 400:
		return "3xx"
	case code >= 400 && code < 500:
		return "4xx"
	case code >= 500 && code < 600:
		return "5xx"
	}
	return "aborted"
}

// ObserveCertificateReload counts a change of the TLS certificate files:
// err is nil when the new pair is served, the reason it was refused
// otherwise (servercreds.Reloader's OnReload).
func (s *Server) ObserveCertificateReload(err error) {
	result := "reloaded"
	if err != nil {
		result = "failed"
	}
	s.metrics.tlsReloads.WithLabelValues(result).Inc()
}

// ObserveCertificateExpiry serves when the TLS certificate served
// expires, as oci_tofu_proxy_tls_certificate_not_after_timestamp_seconds
// (notAfter is asked on each scrape): the alert for a certificate about
// to expire, which readiness deliberately leaves alone until it has
// (docs/proxy.md, "Probes"). Called once, by serve.
func (s *Server) ObserveCertificateExpiry(notAfter func() time.Time) error {
	return s.metrics.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "oci_tofu_proxy_tls_certificate_not_after_timestamp_seconds",
		Help: "When the TLS certificate served expires (Unix time); readiness fails once it has.",
	}, func() float64 { return float64(notAfter().Unix()) }))
}
