package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/prometheus/client_golang/prometheus"
)

// Delivery defaults (Options).
const (
	DefaultQueueSize  = 1000
	DefaultAttempts   = 5
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
)

// maxDiscard bounds what is read of an answer's body (and so of a
// connection kept for the next request); maxHeader its headers.
const (
	maxDiscard = 64 << 10
	maxHeader  = 64 << 10
)

// ContentType is a delivery's: the event in CloudEvents' structured
// JSON mode (the CloudEvents HTTP binding).
const ContentType = "application/cloudevents+json"

// Claimer decides, before its first attempt, whether this process
// delivers an event to a subscription: a fleet's replicas share one
// (on Redis: FleetClaimer) so that an event all of them emit under the
// same ID (events.StableID) is delivered once. Claim answers a Hold
// when the delivery is this process's; Ended when another process ended
// it (outcome skipped); neither when another holds it now: the worker
// asks again, more and more slowly, until it ends or its holder stops
// renewing it (killed), when this process takes it over. An error
// delivers anyway (at least once). entry is what a Recoverer gives back
// should the hold end unended.
type Claimer interface {
	Claim(ctx context.Context, subscription, eventID string, entry []byte) (Claim, error)
}

// Claim is a Claimer's answer.
type Claim struct {
	Hold  Hold // the delivery is this process's
	Ended bool // another process ended the delivery
}

// Hold is a delivery claimed, held until Done or Abandon.
type Hold interface {
	// Done records that the delivery ended (delivered, failed or gone):
	// no other process delivers it.
	Done(ctx context.Context)
	// Abandon gives the delivery up unended (this process is stopping):
	// another may take it over at once.
	Abandon(ctx context.Context)
}

// claimAll is the Claimer of a single process: every delivery is its.
type claimAll struct{}

func (claimAll) Claim(context.Context, string, string, []byte) (Claim, error) {
	return Claim{Hold: noHold{}}, nil
}

// noHold is a claim no one else could take.
type noHold struct{}

func (noHold) Done(context.Context)    {}
func (noHold) Abandon(context.Context) {}

// Options tune a Dispatcher; zero values are the defaults.
type Options struct {
	Logger *slog.Logger
	// Transport makes the requests; nil is a clone of
	// http.DefaultTransport (the environment's proxy) with response
	// headers bounded. Redirects are never followed, whatever it is.
	Transport http.RoundTripper
	// QueueSize bounds each subscription's queue (DefaultQueueSize);
	// full, it drops its oldest event.
	QueueSize int
	// Attempts is the tries per delivery (DefaultAttempts); Backoff the
	// wait after the first failed one (DefaultBackoff), doubling up to
	// MaxBackoff (DefaultMaxBackoff), each wait between half and all of
	// that (jitter).
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Claimer is consulted before a delivery's first attempt; nil
	// claims every delivery. One that is a Recoverer is asked every
	// RecoverEvery (DefaultRecoverEvery) for deliveries to take over.
	Claimer      Claimer
	RecoverEvery time.Duration
}

// Dispatcher delivers events to the subscriptions of a Config: an
// events.Emitter whose Emit only queues (a queue and a worker per
// subscription).
type Dispatcher struct {
	opts    Options
	client  *http.Client
	metrics *metrics
	recent  recent
	// recovery takes over deliveries other replicas left (a Recoverer).
	recovery *recovery

	mu      sync.RWMutex
	workers []*worker // in the config's order
	closed  bool
}

var _ events.Emitter = (*Dispatcher)(nil)

// New is a Dispatcher of cfg's subscriptions (nil: none yet), its
// workers started; Close stops them.
func New(cfg *Config, opts Options) *Dispatcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Transport == nil {
		opts.Transport = defaultTransport()
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff < opts.Backoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.Backoff)
	}
	if opts.Claimer == nil {
		opts.Claimer = claimAll{}
	}
	if opts.RecoverEvery <= 0 {
		opts.RecoverEvery = DefaultRecoverEvery
	}
	d := &Dispatcher{
		opts: opts,
		client: &http.Client{Transport: opts.Transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
	}
	d.metrics = newMetrics(d)
	d.Apply(cfg)
	d.recovery = d.startRecovery()
	return d
}

// defaultTransport is http.DefaultTransport's settings (the
// environment's proxy), answers' headers bounded.
func defaultTransport() *http.Transport {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	t = t.Clone()
	t.MaxResponseHeaderBytes = maxHeader
	return t
}

// Collector is the dispatcher's metrics, for the caller to register.
func (d *Dispatcher) Collector() prometheus.Collector { return d.metrics }

// queueLengths is each subscription's queue length.
func (d *Dispatcher) queueLengths() map[string]int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	n := make(map[string]int, len(d.workers))
	for _, w := range d.workers {
		n[w.name] = w.q.len()
	}
	return n
}

// Recent is the last RecentDeliveries deliveries ended, the latest
// first.
func (d *Dispatcher) Recent() []Delivery { return d.recent.list() }

// Reload reads the subscriptions file again (Load) and applies it; a
// file that does not parse changes nothing.
func (d *Dispatcher) Reload(file string) error {
	cfg, err := Load(file)
	if err != nil {
		return err
	}
	return d.Apply(cfg)
}

// Apply makes cfg's the subscriptions: one of a name already delivered
// to keeps its queue and takes the new settings (and is no longer
// paused by a 410), its queued events the new filters do not want
// being dropped as they come up; a removed one's queued events are
// dropped. A nil
// cfg is no subscriptions.
func (d *Dispatcher) Apply(cfg *Config) error {
	if cfg == nil {
		cfg = &Config{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("events: the dispatcher is closed")
	}
	old := map[string]*worker{}
	for _, w := range d.workers {
		old[w.name] = w
	}
	var next []*worker
	for i := range cfg.Subscriptions {
		s := cfg.Subscriptions[i]
		w := old[s.Name]
		delete(old, s.Name)
		if w == nil {
			w = d.start(&s)
		} else {
			w.sub.Store(&s)
			w.gone.Store(false)
		}
		next = append(next, w)
	}
	for _, w := range old {
		w.removed.Store(true)
		w.cancel()
		w.q.close()
		if n := w.q.clear(); n > 0 { // its series go with it (forget): logged only
			d.opts.Logger.Warn("events: a subscription removed, its queued events dropped", "subscription", w.name, "dropped", n)
		}
	}
	d.workers = next
	return nil
}

// Emit queues e for every subscription that wants it, never waiting:
// a full queue drops its oldest event. After Close, events are dropped.
func (d *Dispatcher) Emit(_ context.Context, e events.Event) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return
	}
	var item *queued
	address := e.Address()
	for _, w := range d.workers {
		if !w.sub.Load().Wants(e.Type, address) {
			continue
		}
		if item == nil {
			body, err := e.MarshalJSON()
			if err != nil {
				d.opts.Logger.Warn("events: an event not sent", "type", e.Type, "error", err.Error())
				return
			}
			item = &queued{id: e.ID, typ: e.Type, subject: e.Subject, address: address, body: body}
		}
		dropped, refused := w.q.push(*item)
		if dropped || refused {
			w.dropped.Inc()
		}
	}
}

// Close stops taking events and waits for the queued ones to be
// delivered (or to fail); at ctx's end it gives up on the rest, drops
// them and returns ctx's error.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	workers := d.workers
	d.mu.Unlock()
	d.recovery.stop()
	for _, w := range workers {
		w.q.close()
	}
	done := make(chan struct{})
	go func() {
		for _, w := range workers {
			<-w.done
		}
		close(done)
	}()
	defer d.closeIdle()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	for _, w := range workers {
		w.cancel()
	}
	<-done
	for _, w := range workers {
		if n := w.q.clear(); n > 0 {
			d.metrics.dropped.WithLabelValues(w.name).Add(float64(n))
			d.opts.Logger.Warn("events: closing, queued events dropped", "subscription", w.name, "dropped", n)
		}
	}
	return ctx.Err()
}

// closeIdle closes the connections kept for the next delivery.
func (d *Dispatcher) closeIdle() {
	if t, ok := d.opts.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// worker delivers a subscription's queue, one event at a time.
type worker struct {
	d    *Dispatcher
	name string
	sub  atomic.Pointer[Subscription]
	q    *queue
	gone atomic.Bool // a 410: deliveries stop until Apply
	// removed: Apply left it out; its metric series go when it stops.
	removed atomic.Bool
	// dropped is the metric's series, looked up once: Emit adds to it.
	dropped prometheus.Counter
	// outboxFailing: the last Recover of its outbox failed (logged once).
	outboxFailing atomic.Bool
	ctx           context.Context
	cancel        context.CancelFunc
	done          chan struct{}
}

func (d *Dispatcher) start(s *Subscription) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{d: d, name: s.Name, q: newQueue(d.opts.QueueSize), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		dropped: d.metrics.dropped.WithLabelValues(s.Name)}
	w.sub.Store(s)
	go w.run()
	return w
}

func (w *worker) run() {
	defer close(w.done)
	defer w.forget()
	for {
		item, ok := w.q.pop(w.ctx)
		if !ok {
			return
		}
		if !w.sub.Load().Wants(item.typ, item.address) {
			w.dropped.Inc() // queued before a reload narrowed the filters
			continue
		}
		r, ended := w.deliver(item)
		if !ended { // stopped while another process held it
			w.dropped.Inc()
			continue
		}
		w.finish(item, r)
	}
}

// forget deletes the metric series of a removed subscription, unless a
// subscription of its name is back: reloads that rename subscriptions
// would otherwise grow the series without end.
func (w *worker) forget() {
	if !w.removed.Load() {
		return
	}
	w.d.mu.RLock()
	defer w.d.mu.RUnlock()
	for _, cur := range w.d.workers {
		if cur.name == w.name {
			return
		}
	}
	w.d.metrics.forget(w.name)
}

// result is how a delivery ended.
type result struct {
	outcome  string
	status   int
	attempts int
	err      error
}

// deliver sends item to the subscription once it holds its claim,
// retrying failures; false when the worker stopped before the delivery
// was its (unsent).
func (w *worker) deliver(item queued) (result, bool) {
	s := w.sub.Load()
	if w.gone.Load() {
		return result{outcome: OutcomeGone, err: errors.New("the endpoint answered 410 Gone before: paused until the subscriptions are reloaded")}, true
	}
	hold, verdict := w.claim(item)
	switch verdict {
	case claimEnded:
		return result{outcome: OutcomeSkipped}, true
	case claimStopped:
		return result{}, false
	}
	r := w.send(s, item)
	w.release(hold, r)
	return r, true
}

// send makes the attempts of item's delivery.
func (w *worker) send(s *Subscription, item queued) result {
	var r result
	for r.attempts = 1; ; r.attempts++ {
		w.d.metrics.attempts.WithLabelValues(w.name).Inc()
		r.status, r.err = w.attempt(s, item)
		switch {
		case r.err == nil:
			r.outcome = OutcomeDelivered
			return r
		case r.status == http.StatusGone:
			w.gone.Store(true)
			r.outcome = OutcomeGone
			return r
		case r.attempts >= w.d.opts.Attempts || !w.wait(r.attempts):
			r.outcome = OutcomeFailed
			return r
		}
	}
}

// attempt POSTs item once, signed now: the answer's status, and an
// error unless it is a 2xx.
func (w *worker) attempt(s *Subscription, item queued) (int, error) {
	ctx, cancel := context.WithTimeout(w.ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL.String(), bytes.NewReader(item.body))
	if err != nil {
		return 0, errors.New("the request could not be made")
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", "oci-tofu-events")
	sign(req.Header, item.id, time.Now(), item.body, s.secrets)
	resp, err := w.d.client.Do(req)
	if err != nil {
		return 0, withoutURL(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDiscard))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp.StatusCode, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, fmt.Errorf("answered %s: redirects are not followed", resp.Status)
	}
	return resp.StatusCode, fmt.Errorf("answered %s", resp.Status)
}

// withoutURL is err without the URL *url.Error quotes (its path or
// query may hold a token).
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return errors.New("no answer within the timeout")
		}
		return ue.Err
	}
	return err
}

// maxErrorText bounds a delivery's error as the recent deliveries and
// the log keep it: an endpoint's status line may be tens of kilobytes.
const maxErrorText = 200

// clip is s cut to maxErrorText bytes (at a rune's start), "…" marking
// a cut.
func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	i := maxErrorText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// wait sleeps the backoff after failed attempt n; false when the worker
// is stopped meanwhile.
func (w *worker) wait(n int) bool {
	t := time.NewTimer(w.d.backoff(n))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// backoff is the wait after failed attempt n: Backoff doubled n-1 times,
// at most MaxBackoff, jittered to between half and all of it.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.opts.MaxBackoff
	if n-1 < 32 {
		if x := d.opts.Backoff << (n - 1); x > 0 && x < b {
			b = x
		}
	}
	return b/2 + rand.N(b/2+1)
}

// finish records a delivery's end: metrics, recent deliveries, the log.
func (w *worker) finish(item queued, r result) {
	w.d.metrics.deliveries.WithLabelValues(w.name, r.outcome).Inc()
	d := Delivery{Time: time.Now(), Subscription: w.name, EventID: item.id, Type: item.typ, Subject: item.subject,
		Outcome: r.outcome, StatusCode: r.status, Attempts: r.attempts}
	if r.err != nil {
		d.Error = clip(r.err.Error())
	}
	w.d.recent.add(d)
	log := w.d.opts.Logger
	args := []any{"subscription", w.name, "endpoint", w.sub.Load().Endpoint(), "event", item.id, "type", item.typ,
		"attempts", r.attempts, "status", r.status}
	switch r.outcome {
	case OutcomeFailed:
		log.Warn("events: a delivery failed", append(args, "error", d.Error)...)
	case OutcomeGone:
		if r.attempts > 0 {
			log.Warn("events: the endpoint answered 410 Gone: the subscription is paused until the subscriptions are reloaded", args...)
		}
	default:
		log.Debug("events: delivery "+r.outcome, args...)
	}
}
