package respond

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
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

// handlerMetrics are one handler's request counters and latency
// histogram, taken from their vectors the first time each is used (so
// the series exported are those of requests served) and kept, so that a
// request pays no label lookup.
type handlerMetrics struct {
	m        *Metrics
	name     string
	latency  atomic.Pointer[prometheus.Observer]
	requests [len(methodLabels)][len(statusClasses)]atomic.Pointer[prometheus.Counter]
}

func (m *Metrics) forHandler(name string) *handlerMetrics {
	return &handlerMetrics{m: m, name: name}
}

// observe counts and times one request.
func (h *handlerMetrics) observe(method string, code int, d time.Duration) {
	mi, ci := methodIndex(method), statusIndex(code)
	c := h.requests[mi][ci].Load()
	if c == nil {
		v := h.m.requests.WithLabelValues(h.name, methodLabels[mi], statusClasses[ci])
		c = &v
		h.requests[mi][ci].Store(c)
	}
	(*c).Inc()
	o := h.latency.Load()
	if o == nil {
		v := h.m.latency.WithLabelValues(h.name)
		o = &v
		h.latency.Store(o)
	}
	(*o).Observe(d.Seconds())
}

func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// The request counters' method and status class labels: every method
// but GET and HEAD is OTHER; "aborted" is a response cut off.
var (
	methodLabels  = [...]string{http.MethodGet, http.MethodHead, "OTHER"}
	statusClasses = [...]string{"2xx", "3xx", "4xx", "5xx", "aborted"}
)

// methodIndex is the index in methodLabels of method's label.
func methodIndex(method string) int {
	switch method {
	case http.MethodGet:
		return 0
	case http.MethodHead:
		return 1
	}
	return 2
}

// statusIndex is the index in statusClasses of code's class.
func statusIndex(code int) int {
	if code >= 200 && code < 600 {
		return code/100 - 2
	}
	return len(statusClasses) - 1
}

// Registry is where the proxy's metrics are registered (served at
// /metrics): collectors beside the proxy's (the shared state's,
// pull-through's) register there too.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }
