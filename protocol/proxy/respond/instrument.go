package respond

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime/debug"
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
	"github.com/opencontainers/go-digest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Instrument counts, times and logs requests, and is the recovery boundary
// of each: a panic is logged once with its stack and answered 500 (or the
// stream cut), never the end of the process. Logs carry the method, the
// path without query (archive URL signatures stay out) and the outcome;
// never headers.
func (m *Metrics) Instrument(log *slog.Logger, name string, h http.Handler) http.Handler {
	hm := m.forHandler(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := sinceEpoch()
		rec := &recorder{ResponseWriter: w, sinks: m.sinks}
		defer func() {
			p := recover()
			aborted := p != nil
			if aborted && p != http.ErrAbortHandler {
				log.Error("panic serving a request", "handler", name, "path", r.URL.EscapedPath(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					WriteError(rec, http.StatusInternalServerError, "internal error")
					aborted = false
				}
			}
			record(log, hm, r, rec, start, aborted)
			if rec.note != nil {
				m.audit(r, rec, aborted)
			}
			if aborted {
				panic(http.ErrAbortHandler) // cut the response; net/http logs nothing for this one
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

// epoch is the origin of sinceEpoch.
var epoch = time.Now()

// sinceEpoch reads the monotonic clock alone (time.Now reads the wall
// clock too): what a request's duration needs.
func sinceEpoch() time.Duration { return time.Since(epoch) }

// record counts and logs one finished request.
func record(log *slog.Logger, hm *handlerMetrics, r *http.Request, rec *recorder, start time.Duration, aborted bool) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if aborted {
		status = 0
	}
	d := sinceEpoch() - start
	hm.observe(r.Method, status, d)
	level := slog.LevelInfo
	if status >= 500 || status == 0 {
		level = slog.LevelWarn
	}
	if !log.Enabled(r.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("handler", hm.name), slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
		slog.Int("status", status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", d),
		slog.String("remote", remoteIP(r)),
	}
	if rec.errMsg != "" {
		attrs = append(attrs, slog.String("error", rec.errMsg))
	}
	if rec.hint != "" {
		attrs = append(attrs, slog.String("hint", rec.hint))
	}
	log.LogAttrs(r.Context(), level, "request", attrs...)
}

func remoteIP(r *http.Request) string { return HostOnly(r.RemoteAddr) }

// HostOnly is the host of host:port, or hostport when it has no port.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// recorder remembers the status and size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	errMsg string
	hint   string
	// The audit event the request makes: who asked (Identify), and the
	// event, made once the request turns out to be one the sinks take
	// (a download, a refusal; a document with AuditDocuments). sinks is
	// nil when nothing takes events.
	sinks *auditSinks
	who   Who
	note  *audit.Event
	// doc is the kind and address a document request names.
	docKind    names.Kind
	docAddress string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hint gives the log line of the request w answers a hint for the
// operator (what to change); never sent to the client.
func Hint(w http.ResponseWriter, hint string) {
	if rec, ok := w.(*recorder); ok {
		rec.hint = hint
	}
}

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

// Registry is where the proxy's metrics are registered (served at
// /metrics): collectors beside the proxy's (the shared state's,
// pull-through's) register there too.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

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

// CountDecision counts decision d of pol (generation gen) on version v
// of address and records a denial for the page; fromFacts says it was
// made on facts read from the registry (min_age, signers). The gate
// tells it every decision that shaped an answer (sources.go: judge).
func (s *Responder) CountDecision(pol *policy.Policy, gen uint64, kind names.Kind, address string, v *names.Version, d policy.Decision, fromFacts bool) {
	s.Metrics.policy.count(pol, gen, kind, d)
	if !d.Allow && v != nil {
		s.Observer.PolicyDenied(kind, address, *v, d, fromFacts)
	}
}

// The audit trail (protocol/audit): the request's recorder carries who
// asked and the event it makes, which handlers and the prologue fill in
// as they learn what was asked and what was decided; Instrument hands it
// to the sinks when the request ends (audit.go). Without sinks each of
// these is a nil check.

// Who is who a request came from, as the audit trail names it.
type Who struct {
	Client, Identity, Subject, Token string
}

// Identify notes who w's request came from.
func Identify(w http.ResponseWriter, who Who) {
	if rec, ok := w.(*recorder); ok {
		rec.who = who
	}
}

// noteOf is the audit event w's request is making, made now if need be;
// nil when nothing takes events.
func noteOf(w http.ResponseWriter) *audit.Event {
	rec, ok := w.(*recorder)
	if !ok || rec.sinks == nil {
		return nil
	}
	if rec.note == nil {
		rec.note = new(audit.Event)
	}
	return rec.note
}

// Artifact is what a download names.
type Artifact struct {
	Kind                             names.Kind
	Address, Version, Platform, File string
}

// Serving notes that w's request downloads a; the delivery notes the
// digest, repository and source.
func Serving(w http.ResponseWriter, a Artifact) {
	if ev := noteOf(w); ev != nil {
		ev.Event, ev.Kind, ev.Address, ev.Version, ev.Platform, ev.File = audit.EventDownload, string(a.Kind), a.Address, a.Version, a.Platform, a.File
	}
}

// Refused notes that w's request was refused (outcome: an audit
// outcome), saying why; kind and address when known.
func Refused(w http.ResponseWriter, outcome string, kind names.Kind, address, rule, reason string) {
	ev := noteOf(w)
	if ev == nil {
		return
	}
	ev.Outcome, ev.Rule, ev.Reason = outcome, rule, reason
	if kind != "" {
		ev.Kind = string(kind)
	}
	if address != "" {
		ev.Address = address
	}
}

// documentRequest notes that w's request asks for a document of kind at
// address: the address of its event if it is refused, or when documents
// are audited.
func documentRequest(w http.ResponseWriter, kind names.Kind, address string) {
	rec, ok := w.(*recorder)
	if !ok || rec.sinks == nil {
		return
	}
	rec.docKind, rec.docAddress = kind, address
	if !rec.sinks.documents {
		return // no event unless the request is refused: nothing made
	}
	if ev := noteOf(w); ev.Event == "" {
		ev.Event = audit.EventDocument
	}
}

// auditsRequests reports whether w's request makes an audit event.
func auditsRequests(w http.ResponseWriter) bool {
	rec, ok := w.(*recorder)
	return ok && rec.sinks != nil
}

// maxAuditField bounds what a client sent (user agent, path) in an event.
const maxAuditField = 512

// audit hands the sinks the event rec's request made: a download, a
// refusal, or a document (noted only when documents are audited).
func (m *Metrics) audit(r *http.Request, rec *recorder, aborted bool) {
	ev := rec.note
	switch {
	case ev.Outcome != "": // refused
	case r.Method == http.MethodHead && ev.Event == audit.EventDownload:
		return // delivers nothing (terraform asks before it downloads)
	case ev.Event != "":
		ev.Outcome = outcomeOf(rec.status, aborted)
	default:
		return
	}
	ev.Client, ev.Identity, ev.Subject, ev.Token = rec.who.Client, rec.who.Identity, rec.who.Subject, rec.who.Token
	if ev.Client == "" {
		ev.Client, ev.Identity = "anonymous", audit.IdentityNone
	}
	if ev.Event == "" {
		ev.Event = audit.EventDocument
	}
	if ev.Address == "" && rec.docAddress != "" {
		ev.Kind, ev.Address = string(rec.docKind), rec.docAddress
	}
	if ev.Address == "" && ev.Kind != string(names.KindTofu) {
		ev.Path = clip(r.URL.EscapedPath())
	}
	ev.Time = time.Now().UTC()
	ev.Remote = remoteIP(r)
	ev.UserAgent = clip(r.UserAgent())
	ev.Status = rec.status
	if ev.Status == 0 && !aborted {
		ev.Status = http.StatusOK
	}
	ev.Bytes = rec.bytes
	m.outcomes.count(ev)
	m.sinks.sink.Record(ev)
}

// count counts ev if it is an artifact delivered or a request refused.
func (m *outcomeMetrics) count(ev *audit.Event) {
	if ev.Delivered() {
		k := indexOf(downloadKinds[:], ev.Kind)
		src := indexOf(downloadSources[:2], ev.Source)
		if src < 0 {
			src = 2
		}
		if k >= 0 {
			m.downloads[k][src].Inc()
		}
		return
	}
	if o := indexOf(refusalOutcomes[:], ev.Outcome); o >= 0 {
		m.refusals[o].Inc()
	}
}

func indexOf(set []string, s string) int {
	for i, x := range set {
		if x == s {
			return i
		}
	}
	return -1
}

// outcomeOf is the audit outcome of a request that was not refused.
func outcomeOf(status int, aborted bool) string {
	switch {
	case aborted:
		return audit.OutcomeAborted
	case status == 0 || status >= 200 && status < 300:
		return audit.OutcomeDelivered
	case status >= 300 && status < 400:
		return audit.OutcomeRedirected
	}
	return audit.OutcomeFailed
}

// clip bounds a string a client sent.
func clip(s string) string {
	if len(s) > maxAuditField {
		return s[:maxAuditField]
	}
	return s
}

// noteBlob notes where a delivered blob comes from: the registry
// (held, with its repository), a file pull-through is downloading, or
// bytes the proxy made.
func noteBlob(ev *audit.Event, b *source.Blob) {
	switch {
	case b.Pulling != nil:
		ev.Source, ev.Digest = audit.SourcePulled, b.Pulling.Digest()
	case b.Repo != nil:
		ev.Source, ev.Digest, ev.Repository = audit.SourceHeld, b.Layer.Digest.String(), b.Repo.Name()
	default:
		ev.Digest = digest.FromBytes(b.Data).String()
	}
	if b.From != nil && b.From.Repo != nil && ev.Repository == "" {
		ev.Repository = b.From.Repo.Name()
	}
}
