package respond

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/deliver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the proxy's Prometheus Metrics, on a registry of its own so
// that several servers (tests) can coexist in one process. Every label
// value comes from a closed set (handler names, a few methods, status
// classes, failure classes, cache names and results), so no client can
// make the number of series grow.
type Metrics struct {
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
	policy           *policyMetrics
	// vulnerable are the provider versions found vulnerable (nil
	// without a vulnerability database: vulnerable.go).
	vulnerable *vulnerableVersions
	// cacheCounters are the cache lookup counters by cache, each
	// cache's taken from the vector by result as they are first used
	// (a closed set); the map is copied on write, so a lookup's count
	// takes no lock and hashes one string; cacheMu serialises the
	// writers.
	cacheCounters atomic.Pointer[map[string]*cacheCounters]
	cacheMu       sync.Mutex
	// sinks, when set, get an event for every artifact delivered and
	// every request refused (and every document with documents);
	// outcomes counts those events.
	sinks    *auditSinks
	outcomes *outcomeMetrics
}

func NewMetrics() *Metrics {
	m := &Metrics{
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
	m.outcomes = newOutcomeMetrics(m.reg)
	return m
}

// deliveryCounters are the metrics blob deliveries count in.
func (m *Metrics) deliveryCounters() deliver.Counters {
	return deliver.Counters{Streamed: m.bytesStreamed, Redirects: m.archiveRedirects, Aborts: m.streamAborts, Upstream: m.upstreamError}
}

// upstreamError counts a failure class (oci.Failure's label).
func (m *Metrics) upstreamError(kind string) {
	m.upstreamErrs.WithLabelValues(kind).Inc()
}

// EtiquetteEvent counts what the registry etiquette did.
func (m *Metrics) EtiquetteEvent(e oci.Event) {
	switch e.Kind {
	case "throttled", "retry", "wait":
		m.etiquette.WithLabelValues(e.Kind).Inc()
	}
	if e.Kind == "wait" {
		m.throttleWait.Add(e.Wait.Seconds())
	}
}

// cacheResults are the results of a cache lookup (protocol/cache).
var cacheResults = [...]string{"hit", "stale", "miss", "failure"}

// cacheCounters are one cache's lookup counters by result (cacheResults).
type cacheCounters [len(cacheResults)]atomic.Pointer[prometheus.Counter]

// ObserveCache counts a cache lookup.
func (m *Metrics) ObserveCache(name, result string) {
	i := slices.Index(cacheResults[:], result)
	if i < 0 {
		m.cache.WithLabelValues(name, result).Inc() // not among the four: no shortcut
		return
	}
	cs := m.cacheCountersOf(name)
	c := cs[i].Load()
	if c == nil {
		v := m.cache.WithLabelValues(name, result)
		c = &v
		cs[i].Store(c)
	}
	(*c).Inc()
}

// cacheCountersOf is the named cache's counters, added on first use.
func (m *Metrics) cacheCountersOf(name string) *cacheCounters {
	if cs := m.cacheCounters.Load(); cs != nil {
		if c := (*cs)[name]; c != nil {
			return c
		}
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	cs := map[string]*cacheCounters{}
	if old := m.cacheCounters.Load(); old != nil {
		if c := (*old)[name]; c != nil {
			return c
		}
		maps.Copy(cs, *old)
	}
	c := new(cacheCounters)
	cs[name] = c
	m.cacheCounters.Store(&cs)
	return c
}

func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is where the proxy's metrics are registered (served at
// /metrics): collectors beside the proxy's (the shared state's,
// pull-through's) register there too.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Download and refusal counts, from the events: labels of closed sets.
var (
	downloadKinds   = [...]string{string(names.KindProvider), string(names.KindModule), string(names.KindTofu)}
	downloadSources = [...]string{audit.SourceHeld, audit.SourcePulled, "generated"} // generated: bytes the proxy made
	refusalOutcomes = [...]string{audit.OutcomeDenied, audit.OutcomeRefused, audit.OutcomeLimited, audit.OutcomeNoAuth}
)

// outcomeMetrics count artifacts delivered, by kind and source, and
// requests refused, by outcome. Every series exists from the start (at
// 0), so a request pays no label lookup.
type outcomeMetrics struct {
	downloads [len(downloadKinds)][len(downloadSources)]prometheus.Counter
	refusals  [len(refusalOutcomes)]prometheus.Counter
}

func newOutcomeMetrics(reg *prometheus.Registry) *outcomeMetrics {
	dv := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oci_tofu_proxy_downloads_total", Help: "Artifacts delivered (sent whole, or handed as a storage URL), by kind (provider, module, tofu) and source (held in the registry, pulled through, or generated by the proxy).",
	}, []string{"kind", "source"})
	rv := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oci_tofu_proxy_refusals_total", Help: "Requests refused, by outcome (denied by the policy, refused: outside the client's scope, limited: rate budget spent, unauthenticated).",
	}, []string{"outcome"})
	reg.MustRegister(dv, rv)
	m := &outcomeMetrics{}
	for i, k := range downloadKinds {
		for j, src := range downloadSources {
			m.downloads[i][j] = dv.WithLabelValues(k, src)
		}
	}
	for i, o := range refusalOutcomes {
		m.refusals[i] = rv.WithLabelValues(o)
	}
	return m
}

// count counts ev if it is an artifact delivered or a request refused.
func (m *outcomeMetrics) count(ev *audit.Event) {
	if ev.Delivered() {
		k := slices.Index(downloadKinds[:], ev.Kind)
		src := slices.Index(downloadSources[:2], ev.Source)
		if src < 0 {
			src = 2
		}
		if k >= 0 {
			m.downloads[k][src].Inc()
		}
		return
	}
	if o := slices.Index(refusalOutcomes[:], ev.Outcome); o >= 0 {
		m.refusals[o].Inc()
	}
}
