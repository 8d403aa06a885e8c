package pullthrough

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// metrics are pull-through's metrics. Labels
// come from closed sets: kind is "provider", "module" or "tofu"; results
// and failures are "stored", "tampered", "refused", "not_found",
// "unreachable", "error".
type metrics struct {
	releases     *prometheus.CounterVec
	downloads    *prometheus.CounterVec
	originErrors *prometheus.CounterVec
	degraded     *prometheus.CounterVec
	remembered   *prometheus.CounterVec
	sharedWaits  *prometheus.CounterVec
	inflight     prometheus.Gauge
	originBytes  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_releases_total",
			Help: "Releases pulled through from an origin, by kind and result (stored, tampered, refused, not_found, unreachable, error).",
		}, []string{"kind", "result"}),
		downloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_origin_downloads_total",
			Help: "Files downloaded from origins (each once, however many clients wait for it), by kind.",
		}, []string{"kind"}),
		originErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_origin_errors_total",
			Help: "Failed reads of origin metadata (listings, download answers, SHA256SUMS, signatures), by kind and failure.",
		}, []string{"kind", "failure"}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_listings_without_origin_total",
			Help: "Version listings answered with only what the registry holds because the origin failed, by kind.",
		}, []string{"kind"}),
		remembered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_remembered_failures_total",
			Help: "Requests answered with a recently failed origin release's error without asking the origin again, by kind.",
		}, []string{"kind"}),
		sharedWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_shared_waits_total",
			Help: "Requests that found another replica pulling their release (waited) and pulls taken over from a replica whose lease expired (took_over).",
		}, []string{"result"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oci_tofu_proxy_pullthrough_in_flight",
			Help: "Releases being pulled through right now.",
		}),
		originBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oci_tofu_proxy_pullthrough_origin_bytes_total",
			Help: "Bytes downloaded from origins.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.releases, m.downloads, m.originErrors, m.degraded, m.remembered, m.sharedWaits, m.inflight, m.originBytes)
	}
	return m
}

// result counts a finished pull.
func (m *metrics) result(kind names.Kind, result string) {
	m.releases.WithLabelValues(string(kind), result).Inc()
}
