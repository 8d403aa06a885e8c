package webhook

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// How a delivery ended: the outcome label of
// oci_tofu_webhook_deliveries_total and Delivery.Outcome.
const (
	OutcomeDelivered = "delivered" // a 2xx answer
	OutcomeFailed    = "failed"    // every attempt failed (or Close gave up)
	OutcomeGone      = "gone"      // the endpoint answered 410: the subscription is paused
	OutcomeSkipped   = "skipped"   // the Claimer gave the delivery to another replica
)

// metrics are the dispatcher's, by subscription name.
type metrics struct {
	deliveries *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	recovered  *prometheus.CounterVec
	// queue is read at each scrape: each subscription's queue length.
	queue *prometheus.Desc
	d     *Dispatcher
}

func newMetrics(d *Dispatcher) *metrics {
	return &metrics{d: d,
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oci_tofu_webhook_deliveries_total",
			Help: "Event deliveries ended, by subscription and outcome (delivered, failed, gone, skipped)."}, []string{"subscription", "outcome"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oci_tofu_webhook_dropped_total",
			Help: "Events dropped unsent: the subscription's queue was full (its oldest dropped), the dispatcher was closed, or a reload narrowed the subscription's filters."}, []string{"subscription"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oci_tofu_webhook_attempts_total",
			Help: "HTTP requests made to deliver events, retries included."}, []string{"subscription"}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oci_tofu_webhook_recovered_total",
			Help: "Events queued again from the fleet's outbox: their delivery was left unended by a replica that stopped."}, []string{"subscription"}),
		queue: prometheus.NewDesc("oci_tofu_webhook_queue_length", "Events waiting in the subscription's queue.", []string{"subscription"}, nil),
	}
}

// forget deletes subscription's series.
func (m *metrics) forget(subscription string) {
	for _, v := range []*prometheus.CounterVec{m.deliveries, m.dropped, m.attempts} {
		v.DeletePartialMatch(prometheus.Labels{"subscription": subscription})
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.deliveries, m.dropped, m.attempts, m.recovered}
}

// Describe and Collect make the metrics one prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	ch <- m.queue
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
	for name, n := range m.d.queueLengths() {
		ch <- prometheus.MustNewConstMetric(m.queue, prometheus.GaugeValue, float64(n), name)
	}
}

// Delivery is one event's delivery to one subscription, ended, as the
// status page lists it.
type Delivery struct {
	Time         time.Time // when it ended
	Subscription string
	EventID      string
	Type         string
	Subject      string
	Outcome      string // the Outcome constants
	StatusCode   int    // the last answer's (0: none, a timeout or refused connection)
	Attempts     int
	// Error is the last attempt's failure, without the URL.
	Error string
}

// RecentDeliveries is how many deliveries Recent keeps.
const RecentDeliveries = 50

// recent is a ring of the last RecentDeliveries deliveries.
type recent struct {
	mu   sync.Mutex
	ring [RecentDeliveries]Delivery
	next int
	n    int
}

func (r *recent) add(d Delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring[r.next] = d
	r.next = (r.next + 1) % len(r.ring)
	if r.n < len(r.ring) {
		r.n++
	}
}

// list is the deliveries, the latest first.
func (r *recent) list() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Delivery, 0, r.n)
	for i := 1; i <= r.n; i++ {
		out = append(out, r.ring[(r.next-i+len(r.ring))%len(r.ring)])
	}
	return out
}
