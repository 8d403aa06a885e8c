package protocol

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the proxy's Prometheus metrics, on a registry of its own so
// that several servers (tests) can coexist in one process.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	cache         *prometheus.CounterVec
	bytesStreamed prometheus.Counter
	upstreamErrs  *prometheus.CounterVec
	streamAborts  *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_requests_total", Help: "HTTP requests by handler, method and status code.",
		}, []string{"handler", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oci_tofu_proxy_request_duration_seconds", Help: "Time to serve a request (archives: until the last byte).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"handler"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_cache_requests_total", Help: "Cache lookups by cache and result (hit, miss).",
		}, []string{"cache", "result"}),
		bytesStreamed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_archive_bytes_streamed_total", Help: "Archive bytes streamed to clients.",
		}),
		upstreamErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_upstream_errors_total", Help: "Failures talking to the OCI registry, by kind.",
		}, []string{"kind"}),
		streamAborts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_stream_aborts_total", Help: "Archive downloads aborted mid-stream, by reason.",
		}, []string{"reason"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.cache, m.bytesStreamed, m.upstreamErrs, m.streamAborts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) upstreamError(kind string) {
	m.upstreamErrs.WithLabelValues(kind).Inc()
}

func (m *metrics) observe(handler, method string, code int, d time.Duration) {
	m.requests.WithLabelValues(handler, method, statusLabel(code)).Inc()
	m.latency.WithLabelValues(handler).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func statusLabel(code int) string {
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{byte('0' + code/100), byte('0' + code/10%10), byte('0' + code%10)})
}
