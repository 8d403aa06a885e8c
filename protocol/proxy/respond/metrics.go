package respond

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/deliver"
	"github.com/oci-tofu/oci-tofu/protocol/source"
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

// WatchPolicy counts the policy's decisions and serves the reloads of
// its file that status reports (nil: no policy file).
func (m *Metrics) WatchPolicy(status func() policyfile.Status) {
	m.policy = newPolicyMetrics(m.reg, status)
}

// policyMetrics count the policy's decisions and report its file's
// reloads. The decisions' labels are the kind (provider, module, tofu),
// the name of the rule that decided — written in the policy file, which
// holds at most policy.MaxRules rules, or "default" — and allow or deny:
// never anything a client sent. When a reload drops a rule, its series
// go too, so the number of series stays bounded by the file in force.
type policyMetrics struct {
	decisions *prometheus.CounterVec
	// vulnerable counts the decisions on versions with known
	// vulnerabilities the policy acted on, by decision.
	vulnerable *prometheus.CounterVec
	mu         sync.Mutex
	gen        atomic.Uint64 // the policy generation counted contains only its rules
	counted    sync.Map      // policyRuleKey → true: the series that exist
}

type policyRuleKey struct {
	kind names.Kind
	rule string
}

func newPolicyMetrics(reg *prometheus.Registry, status func() policyfile.Status) *policyMetrics {
	m := &policyMetrics{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oci_tofu_policy_decisions_total", Help: "Policy decisions that shaped an answer, by kind, deciding rule (its name in the policy file, or default) and decision (allow or deny).",
	}, []string{"kind", "rule", "decision"}),
		vulnerable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_policy_vulnerable_decisions_total", Help: "Policy decisions on versions whose SBOM matches known vulnerabilities the policy acts on (its vulnerabilities blocks), by decision (allow: served with a warning; deny).",
		}, []string{"decision"})}
	reg.MustRegister(m.decisions, m.vulnerable)
	if status == nil {
		return m
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "oci_tofu_policy_reloads_total", Help: "Policies put in force from the policy file after the first.",
		}, func() float64 { return float64(status().Reloads) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "oci_tofu_policy_reload_errors_total", Help: "Reloads of the policy file that failed (unreadable or invalid); the last good policy stayed in force.",
		}, func() float64 { return float64(status().Errors) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_policy_last_reload_success_timestamp_seconds", Help: "When the policy in force was read from its file (Unix time).",
		}, func() float64 { return float64(status().LoadedAt.UnixNano()) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_policy_file_current", Help: "1 when the policy in force is the policy file's current content, 0 when the file's last reload failed.",
		}, func() float64 {
			if status().Current {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_policy_rules", Help: "Rules of the policy in force.",
		}, func() float64 { return float64(status().Rules) }),
	)
	return m
}

// count counts decision d of pol (generation gen) on kind.
func (m *policyMetrics) count(pol *policy.Policy, gen uint64, kind names.Kind, d policy.Decision) {
	if m.gen.Load() != gen {
		m.forgetDroppedRules(pol, gen)
	}
	outcome := "allow"
	if !d.Allow {
		outcome = "deny"
	}
	key := policyRuleKey{kind, d.Rule}
	if _, ok := m.counted.Load(key); !ok {
		m.counted.Store(key, true)
	}
	m.decisions.WithLabelValues(string(kind), d.Rule, outcome).Inc()
	if len(d.Vulnerable) > 0 {
		m.vulnerable.WithLabelValues(outcome).Inc()
	}
}

// forgetDroppedRules deletes the series of rules pol does not have, once
// per generation.
func (m *policyMetrics) forgetDroppedRules(pol *policy.Policy, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen.Load() >= gen {
		return
	}
	m.counted.Range(func(k, _ any) bool {
		key := k.(policyRuleKey)
		if key.rule != policy.DefaultRule && !pol.HasRule(key.kind, key.rule) {
			m.decisions.DeletePartialMatch(prometheus.Labels{"kind": string(key.kind), "rule": key.rule})
			m.counted.Delete(k)
		}
		return true
	})
	m.gen.Store(gen)
}

// CountDecision counts decision d of the policy in force and records a
// denial for the page. The gate tells it every decision that shaped an
// answer (gate.Policy.Observe: proxy/sources.go).
func (s *Responder) CountDecision(d source.Decision) {
	s.Metrics.policy.count(d.Policy, d.Generation, d.Kind, d.Decision)
	if !d.Allow && d.Version != nil {
		s.Observer.PolicyDenied(d.Kind, d.Address, *d.Version, d.Decision, d.FromFacts)
	}
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
