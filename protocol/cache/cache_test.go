package cache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func counting(calls *atomic.Int64, val string, delay time.Duration) cache.Fetch[string] {
	return func(ctx context.Context) (string, int64, error) {
		calls.Add(1)
		select {
		case <-time.After(delay):
			return val, int64(len(val)), nil
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
}

// Concurrent callers of a missing key share one fetch.
func TestOneFetchForManyCallers(t *testing.T) {
	c := cache.New[string](cache.Options{TTL: time.Minute})
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Get(context.Background(), "k", counting(&calls, "v", 50*time.Millisecond))
			if err != nil || r.Val != "v" {
				t.Errorf("%v %v", r, err)
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d fetches", calls.Load())
	}
}

// After the TTL a value is served stale at once while one background
// fetch revalidates it; beyond MaxStale callers wait for a fresh value.
// "At once" is "while the revalidation is still held back", whatever the
// machine's speed.
func TestStaleWhileRevalidate(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	c := cache.New[string](cache.Options{TTL: time.Minute, MaxStale: time.Hour, Now: clk.Now})
	var calls atomic.Int64
	c.Get(context.Background(), "k", counting(&calls, "v1", 0))
	clk.Add(2 * time.Minute)
	release := make(chan struct{})
	held := func(ctx context.Context) (string, int64, error) {
		<-release
		return counting(&calls, "v2", 0)(ctx)
	}
	got := make(chan cache.Result[string], 1)
	go func() {
		r, err := c.Get(context.Background(), "k", held)
		if err != nil {
			t.Errorf("stale read: %v", err)
		}
		got <- r
	}()
	select {
	case r := <-got:
		if r.Val != "v1" {
			t.Fatalf("stale read: %v, want v1", r)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the stale read waited for its revalidation")
	}
	c.Get(context.Background(), "k", counting(&calls, "v3", 0)) // joins no second refresh
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, _ := c.Peek("k"); v == "v2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not revalidated in the background")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d fetches, want 2", calls.Load())
	}
	clk.Add(2 * time.Hour)
	r, _ := c.Get(context.Background(), "k", counting(&calls, "v4", 0))
	if r.Val != "v4" {
		t.Fatalf("beyond MaxStale: %v", r)
	}
}

// A failure is remembered for FailureTTL: retrying clients do not reach
// the upstream again.
func TestFailuresRemembered(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	c := cache.New[string](cache.Options{TTL: time.Minute, FailureTTL: 5 * time.Second, Now: clk.Now})
	var calls atomic.Int64
	boom := errors.New("429")
	fail := func(ctx context.Context) (string, int64, error) { calls.Add(1); return "", 0, boom }
	for i := 0; i < 10; i++ {
		if _, err := c.Get(context.Background(), "k", fail); !errors.Is(err, boom) {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d fetches", calls.Load())
	}
	clk.Add(6 * time.Second)
	c.Get(context.Background(), "k", fail)
	if calls.Load() != 2 {
		t.Fatalf("failure remembered too long: %d", calls.Load())
	}
}

// When every caller has gone, the fetch is cancelled and nothing is
// remembered; the next caller starts afresh.
func TestFetchCancelledWhenNobodyWaits(t *testing.T) {
	c := cache.New[string](cache.Options{TTL: time.Minute})
	started, stopped := make(chan struct{}), make(chan error, 1)
	slow := func(ctx context.Context) (string, int64, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return "", 0, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := c.Get(ctx, "k", slow); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang guard: generous for a loaded machine
		t.Fatal("the fetch went on for nobody")
	}
	var calls atomic.Int64
	if r, err := c.Get(context.Background(), "k", counting(&calls, "v", 0)); err != nil || r.Val != "v" {
		t.Fatalf("after a cancelled fetch: %v %v", r, err)
	}
}

// A waiter that leaves does not cancel the fetch others still wait for.
func TestFetchGoesOnForRemainingWaiters(t *testing.T) {
	c := cache.New[string](cache.Options{TTL: time.Minute})
	var calls atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := c.Get(context.Background(), "k", counting(&calls, "v", 100*time.Millisecond))
		if err != nil || r.Val != "v" {
			t.Errorf("remaining waiter: %v %v", r, err)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	c.Get(ctx, "k", counting(&calls, "v", 100*time.Millisecond))
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d fetches", calls.Load())
	}
}

func TestBoundedByEntriesAndCost(t *testing.T) {
	// Each entry costs its value's cost plus its key's length.
	c := cache.New[string](cache.Options{MaxEntries: 3, MaxCost: 14})
	for _, k := range []string{"a", "b", "c", "d"} {
		c.Add(k, "xx", 2)
	}
	if c.Len() != 3 {
		t.Fatalf("%d entries", c.Len())
	}
	if _, ok := c.Peek("a"); ok {
		t.Fatal("least recently used entry kept")
	}
	c.Add("big", "xxxxxxxx", 8)
	if c.Len() != 2 { // 8+3 and one of 2+1
		t.Fatalf("%d entries after a costly one", c.Len())
	}
}

// A fetch that panics is a failure, not the end of the process.
func TestPanickingFetchIsAnError(t *testing.T) {
	c := cache.New[string](cache.Options{})
	var calls atomic.Int64
	boom := func(context.Context) (string, int64, error) { calls.Add(1); panic("boom") }
	_, err := c.Get(context.Background(), "k", boom)
	var pe *cache.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 || !pe.FirstReport() {
		t.Fatalf("%v", err)
	}
	// Remembered like any failure: the same panic is not met again at
	// once, and is reported once.
	_, err = c.Get(context.Background(), "k", boom)
	if !errors.As(err, &pe) || calls.Load() != 1 || pe.FirstReport() {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	if err := cache.Recover(func() error { var s []int; _ = s[len(s)]; return nil }); !errors.As(err, &pe) {
		t.Fatalf("Recover: %v", err)
	}
}

// Bookkeeping counts: small values cannot fill memory past MaxCost.
func TestEntryCostBoundsSmallEntries(t *testing.T) {
	c := cache.New[string](cache.Options{MaxCost: 1000, EntryCost: 300})
	for _, k := range []string{"a", "b", "c", "d"} {
		c.Add(k, "x", 1)
	}
	if c.Len() != 3 || c.Cost() != 3*(1+300+1) {
		t.Fatalf("%d entries costing %d", c.Len(), c.Cost())
	}
}

// ForgetIf drops a value its caller found wrong, so the next Get fetches
// again; a value the check does not recognise (a newer one) stays.
func TestForgetIf(t *testing.T) {
	ctx := context.Background()
	c := cache.New[string](cache.Options{TTL: time.Hour})
	var calls atomic.Int64
	if _, err := c.Get(ctx, "k", counting(&calls, "bad", 0)); err != nil {
		t.Fatal(err)
	}
	c.ForgetIf("k", func(v string) bool { return v == "other" })
	if r, _ := c.Get(ctx, "k", counting(&calls, "good", 0)); r.Val != "bad" || calls.Load() != 1 {
		t.Fatalf("a value the check does not recognise was dropped: %q after %d fetches", r.Val, calls.Load())
	}
	c.ForgetIf("k", func(v string) bool { return v == "bad" })
	if r, _ := c.Get(ctx, "k", counting(&calls, "good", 0)); r.Val != "good" || calls.Load() != 2 {
		t.Fatalf("after ForgetIf: %q after %d fetches; want a new fetch", r.Val, calls.Load())
	}
	if c.Cost() != int64(len("good")+len("k")) || c.Len() != 1 { // the value and its key
		t.Errorf("cost %d, len %d after replacing the forgotten value", c.Cost(), c.Len())
	}
}
