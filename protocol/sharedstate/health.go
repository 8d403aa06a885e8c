package sharedstate

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operations, the closed set of the errors metric's op label.
var ops = []string{"lease", "renew", "release", "put", "get", "publish", "gather"}

// health is a shared store's circuit breaker, metrics and rate-limited
// log: after failures consecutive failures the breaker opens for open,
// then lets one operation through; its success closes it.
type health struct {
	failures int
	open     time.Duration
	log      *slog.Logger
	where    string

	mu          sync.Mutex
	streak      int
	openUntil   time.Time
	probing     bool
	unavailable rateLimitedLog // the failures' warnings
	down        bool

	errors *prometheus.CounterVec
	up     prometheus.Gauge
}

// logEvery bounds the log lines about a failing store.
const logEvery = 10 * time.Second

func newHealth(failures int, open time.Duration, log *slog.Logger, where string) *health {
	if failures <= 0 {
		failures = 3
	}
	if open <= 0 {
		open = 5 * time.Second
	}
	h := &health{failures: failures, open: open, log: log, where: where,
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_shared_cache_errors_total",
			Help: "Shared cache operations that failed or were skipped while its circuit breaker was open, by operation (lease, renew, release, put, get: pull-through; publish, gather: the page's records).",
		}, []string{"op"}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oci_tofu_shared_cache_up",
			Help: "1 while the shared cache answers, 0 while it fails (replicas then work on their own).",
		})}
	for _, op := range ops {
		h.errors.WithLabelValues(op)
	}
	h.up.Set(1)
	return h
}

// allow says whether an operation may be tried now.
func (h *health) allow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streak < h.failures {
		return true
	}
	if time.Now().Before(h.openUntil) || h.probing {
		return false
	}
	h.probing = true // one operation tries the store again
	return true
}

// failed counts a failed (or refused) operation and logs now and then.
func (h *health) failed(op string, err error) {
	h.errors.WithLabelValues(op).Inc()
	h.up.Set(0)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != ErrUnavailable {
		h.streak++
		h.probing = false
		if h.streak >= h.failures {
			h.openUntil = time.Now().Add(h.open)
		}
	}
	h.down = true
	h.unavailable.warn(h.log, "shared cache unavailable: replicas work on their own until it answers again",
		slog.String("shared_cache", h.where), slog.String("op", op), slog.Any("error", err))
}

// release ends a probe that told nothing (its caller gave up).
func (h *health) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.probing = false
}

// ok records a successful operation: the breaker closes.
func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streak, h.probing = 0, false
	if h.down {
		h.down = false
		h.log.Info("shared cache answers again", slog.String("shared_cache", h.where))
	}
	h.up.Set(1)
}

// Describe and Collect make the store's metrics one prometheus.Collector.
func (h *health) Describe(ch chan<- *prometheus.Desc) {
	h.errors.Describe(ch)
	h.up.Describe(ch)
}

func (h *health) Collect(ch chan<- prometheus.Metric) {
	h.errors.Collect(ch)
	h.up.Collect(ch)
}

func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }

// rateLimitedLog writes a warning at most once every logEvery.
type rateLimitedLog struct {
	mu   sync.Mutex
	last time.Time
}

func (l *rateLimitedLog) warn(log *slog.Logger, msg string, attrs ...any) {
	l.mu.Lock()
	due := time.Since(l.last) >= logEvery
	if due {
		l.last = time.Now()
	}
	l.mu.Unlock()
	if due {
		log.Warn(msg, attrs...)
	}
}
