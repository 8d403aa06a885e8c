package health

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable time for the probes' freshness.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// registry is a Check whose answer the test sets, counting its runs.
type registry struct {
	calls atomic.Int32
	mu    sync.Mutex
	err   error
}

func (r *registry) check(context.Context) error {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *registry) set(err error) { r.mu.Lock(); r.err = err; r.mu.Unlock() }

func newProbes(r *registry) (*Probes, *clock) {
	c := &clock{t: time.Unix(1700000000, 0)}
	p := New(Options{Registries: r.check, Interval: 5 * time.Second})
	p.now = c.now
	return p, c
}

func probe(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// waitCheck waits until the background check the last probe started has
// finished (it runs at most once at a time).
func waitCheck(t *testing.T, p *Probes) {
	t.Helper()
	p.mu.Lock()
	done := p.running
	p.mu.Unlock()
	if done != nil {
		<-done
	}
}

func TestReadyCachesTheRegistryCheck(t *testing.T) {
	r := &registry{}
	p, c := newProbes(r)
	h := p.ReadyHandler()
	for range 100 {
		if code, body := probe(t, h); code != 200 || body != "ready\n" {
			t.Fatalf("readyz: %d %q", code, body)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("100 probes within the interval reached the registry %d times, want 1", n)
	}
	// The registry goes down: the stale "ready" is answered once more
	// while one check runs, then "not ready" until it recovers.
	r.set(errors.New("dial tcp: connection refused"))
	c.add(6 * time.Second)
	if code, _ := probe(t, h); code != 200 {
		t.Fatalf("the stale result should be answered while the check runs, got %d", code)
	}
	waitCheck(t, p)
	code, body := probe(t, h)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "connection refused") {
		t.Fatalf("registry down: %d %q", code, body)
	}
	if n := r.calls.Load(); n != 2 {
		t.Fatalf("registry checked %d times, want 2", n)
	}
	r.set(nil)
	c.add(6 * time.Second)
	probe(t, h)
	waitCheck(t, p)
	if code, _ := probe(t, h); code != 200 {
		t.Fatalf("registry back: %d", code)
	}
}

func TestReadyFailsOnConditionsAndDrain(t *testing.T) {
	r := &registry{}
	p, c := newProbes(r)
	h := p.ReadyHandler()
	expiry := c.now().Add(time.Minute)
	p.AddCondition("tls certificate", func(now time.Time) error {
		if !now.Before(expiry) {
			return errors.New("expired")
		}
		return nil
	})
	p.AddCondition("another", func(time.Time) error { return nil })
	if code, body := probe(t, h); code != 200 {
		t.Fatalf("conditions holding: %d %q", code, body)
	}
	c.add(time.Minute)
	code, body := probe(t, h)
	if code != 503 || body != "not ready: tls certificate: expired\n" {
		t.Fatalf("a condition that no longer holds: %d %q", code, body)
	}
	expiry = expiry.Add(time.Hour) // a new certificate
	if code, body := probe(t, h); code != 200 {
		t.Fatalf("the condition holds again: %d %q", code, body)
	}
	p.Drain()
	if code, body := probe(t, h); code != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("draining: %d %q", code, body)
	}
	// Liveness does not depend on readiness.
	if code, body := probe(t, p.LiveHandler()); code != 200 || body != "live\n" {
		t.Fatalf("livez while draining: %d %q", code, body)
	}
}

func TestFirstProbeWaitsForTheCheckOrItsContext(t *testing.T) {
	release := make(chan struct{})
	p := New(Options{Registries: func(ctx context.Context) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Ready(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a probe whose request ended: %v", err)
	}
	close(release)
	if err := p.Ready(context.Background()); err != nil {
		t.Fatalf("after the first check: %v", err)
	}
}
