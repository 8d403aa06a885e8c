package health

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Check reports whether what the process depends on answers (nil).
type Check func(ctx context.Context) error

// Defaults of Options.
const (
	DefaultInterval = 5 * time.Second
	DefaultTimeout  = 3 * time.Second
)

// Options configure Probes.
type Options struct {
	// Registries checks that the registries served from can be reached.
	// Nil: nothing to check.
	Registries Check
	// Interval is how long a result of Registries is reused (default
	// DefaultInterval): probes never reach a registry more often.
	Interval time.Duration
	// Timeout bounds one run of Registries (default DefaultTimeout).
	Timeout time.Duration
	// Logger receives a line when readiness changes (default slog.Default()).
	Logger *slog.Logger
}

// Probes answer readiness and liveness. Their zero value is not usable:
// make them with New.
type Probes struct {
	opts     Options
	draining atomic.Bool

	mu         sync.Mutex
	conditions map[string]Condition
	checked    time.Time     // when Registries last finished
	checkErr   error         // what it said
	running    chan struct{} // closed when the running check ends; nil when none runs
	wasReady   *bool         // the last readiness answered, for logging changes
	now        func() time.Time
}

// New makes Probes.
func New(opts Options) *Probes {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Probes{opts: opts, conditions: map[string]Condition{}, now: time.Now}
}

// ErrDraining is readiness while the process shuts down.
var ErrDraining = errors.New("draining: the process is shutting down")

// Drain makes readiness fail from now on: the process is shutting down and
// load balancers should stop sending it new requests.
func (p *Probes) Drain() { p.draining.Store(true) }

// Draining reports whether Drain was called.
func (p *Probes) Draining() bool { return p.draining.Load() }

// A Condition is a cheap, local check of something readiness depends
// on (no I/O: it runs on every probe): nil while it holds, or why not.
// now is the probes' clock.
type Condition func(now time.Time) error

// AddCondition makes readiness fail while the named condition does not
// hold (a TLS certificate in use that has expired, say).
func (p *Probes) AddCondition(name string, c Condition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conditions[name] = c
}

// Ready is nil when the process should get requests, or why not.
func (p *Probes) Ready(ctx context.Context) error {
	if p.Draining() {
		return ErrDraining
	}
	if err := p.failedConditions(); err != nil {
		return err
	}
	return p.registries(ctx)
}

// failedConditions joins the conditions that do not hold, in name order.
func (p *Probes) failedConditions() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.conditions))
	for n := range p.conditions {
		names = append(names, n)
	}
	sort.Strings(names)
	var msgs []string
	now := p.now()
	for _, n := range names {
		if err := p.conditions[n](now); err != nil {
			msgs = append(msgs, n+": "+err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// registries answers from the last check while it is fresh. A stale
// result starts one check in the background and is answered meanwhile;
// with no result yet, the caller waits for the first check (or its ctx).
// This is not protocol/cache on purpose: the cache cancels a fetch once
// no caller waits for it and keeps no failure stale, whereas a check
// here runs to its own Timeout whoever leaves (a kubelet probe timing out
// on a slow registry must not cancel every check before it ends) and a
// failed check is a result like any other.
func (p *Probes) registries(ctx context.Context) error {
	if p.opts.Registries == nil {
		return nil
	}
	p.mu.Lock()
	fresh := !p.checked.IsZero() && p.now().Sub(p.checked) < p.opts.Interval
	if fresh {
		err := p.checkErr
		p.mu.Unlock()
		return err
	}
	done := p.startCheckLocked()
	if !p.checked.IsZero() {
		err := p.checkErr
		p.mu.Unlock()
		return err
	}
	p.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkErr
}

// startCheckLocked starts a check unless one runs, and returns the
// channel closed when the running one ends. p.mu is held.
func (p *Probes) startCheckLocked() <-chan struct{} {
	if p.running != nil {
		return p.running
	}
	done := make(chan struct{})
	p.running = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
		err := p.opts.Registries(ctx)
		cancel()
		p.mu.Lock()
		p.checked, p.checkErr, p.running = p.now(), err, nil
		p.mu.Unlock()
		close(done)
	}()
	return done
}

// ReadyHandler serves /readyz: 200 "ready", or 503 with the reason.
func (p *Probes) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := p.Ready(r.Context())
		p.logChange(err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
}

// LiveHandler serves /livez: answering at all is the proof of life (a
// wedged serving loop does not answer, and the kubelet's probe times out).
func (p *Probes) LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("live\n"))
	})
}

// logChange logs when readiness changes between probes.
func (p *Probes) logChange(err error) {
	ready := err == nil
	p.mu.Lock()
	changed := p.wasReady == nil || *p.wasReady != ready
	p.wasReady = &ready
	p.mu.Unlock()
	switch {
	case !changed:
	case ready:
		p.opts.Logger.Info("ready")
	default:
		p.opts.Logger.Warn("not ready", "reason", err.Error())
	}
}
