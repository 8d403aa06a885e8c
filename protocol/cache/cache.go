// Package cache is the proxy's in-memory cache: bounded (entries and an
// approximate byte cost, least recently used out first), one fetch per key
// however many callers ask at once, values served stale for a bounded time
// while one background fetch revalidates them, failures remembered for a
// moment so a struggling registry is not asked again by every retrying
// client, and fetches cancelled as soon as no caller waits for them.
package cache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Options bound a cache and set its times.
type Options struct {
	// Name labels the cache in Observe.
	Name string
	// TTL is how long a value is fresh; 0 means forever (content
	// addressed by digest never changes).
	TTL time.Duration
	// MaxStale is how long after its TTL a value is still served while a
	// background fetch revalidates it; 0 means never served stale.
	MaxStale time.Duration
	// FailureTTL is how long a failed fetch is remembered (default 5s;
	// negative: never); cancelled fetches are never remembered.
	FailureTTL time.Duration
	// MaxEntries and MaxCost bound the cache (defaults 4096 and unbounded).
	MaxEntries int
	MaxCost    int64
	// EntryCost is added to every entry's cost, with its key's length:
	// the cache's own bookkeeping per entry, so that MaxCost bounds the
	// memory the cache holds, small entries included.
	EntryCost int64
	// Timeout bounds each fetch (default 30s).
	Timeout time.Duration
	// Observe, when set, is told the result of each lookup: "hit",
	// "stale", "miss", "failure" (a remembered failure answered).
	Observe func(name, result string)
	// Now is the clock (tests).
	Now func() time.Time
}

// Fetch computes a value for a key; cost is its approximate size in bytes.
type Fetch[V any] func(ctx context.Context) (val V, cost int64, err error)

// Cache maps keys to values fetched on demand.
type Cache[V any] struct {
	opts Options

	mu      sync.Mutex
	ll      *list.List // of *entry[V], most recently used first
	items   map[string]*list.Element
	cost    int64
	flights map[string]*flight[V]
}

type entry[V any] struct {
	key     string
	val     V
	err     error
	cost    int64
	fetched time.Time
	expires time.Time // zero: never
}

// Expirer is a value that knows when it stops being fresh, earlier than
// its cache's TTL would say (a document derived from older data).
type Expirer interface {
	Expires() time.Time
}

// flight is one fetch in progress and the callers waiting for it.
type flight[V any] struct {
	key     string
	done    chan struct{}
	val     V
	err     error
	fetched time.Time
	waiters int
	// background fetches revalidate a stale value nobody waits for; they
	// are not cancelled when waiters leave.
	background bool
	cancel     context.CancelFunc
	// detached fetches were forgotten while under way (ForgetMatching):
	// their result goes to their waiters only, not into the cache.
	detached bool
}

// New makes a cache.
func New[V any](opts Options) *Cache[V] {
	if opts.FailureTTL == 0 {
		opts.FailureTTL = 5 * time.Second
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 4096
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache[V]{opts: opts, ll: list.New(), items: map[string]*list.Element{}, flights: map[string]*flight[V]{}}
}

// Result is a value with the time it was fetched (the age of what it says).
type Result[V any] struct {
	Val     V
	Fetched time.Time
}

// Get returns the value for key: fresh from the cache; stale within
// MaxStale (and revalidated in the background); a failure remembered for
// FailureTTL; or fetched, once for all concurrent callers. When ctx ends
// the caller stops waiting, and the fetch stops too if nobody else waits.
func (c *Cache[V]) Get(ctx context.Context, key string, fetch Fetch[V]) (Result[V], error) {
	c.mu.Lock()
	if r, err, ok := c.lookupLocked(key, fetch); ok {
		c.mu.Unlock()
		return r, err
	}
	f := c.joinLocked(key, fetch, false)
	c.mu.Unlock()
	c.observe("miss")
	return c.wait(ctx, f)
}

// lookupLocked answers from an entry when it can.
func (c *Cache[V]) lookupLocked(key string, fetch Fetch[V]) (Result[V], error, bool) {
	el, ok := c.items[key]
	if !ok {
		return Result[V]{}, nil, false
	}
	e := el.Value.(*entry[V])
	now := c.opts.Now()
	switch {
	case e.err != nil:
		if now.Sub(e.fetched) < c.opts.FailureTTL {
			c.ll.MoveToFront(el)
			c.observeLocked("failure")
			return Result[V]{}, e.err, true
		}
	case e.expires.IsZero() || now.Before(e.expires):
		c.ll.MoveToFront(el)
		c.observeLocked("hit")
		return Result[V]{Val: e.val, Fetched: e.fetched}, nil, true
	case now.Before(e.expires.Add(c.opts.MaxStale)):
		c.ll.MoveToFront(el)
		if _, running := c.flights[key]; !running {
			c.joinLocked(key, fetch, true)
		}
		c.observeLocked("stale")
		return Result[V]{Val: e.val, Fetched: e.fetched}, nil, true
	}
	return Result[V]{}, nil, false
}

// joinLocked adds a waiter to the key's fetch, starting it when none runs.
func (c *Cache[V]) joinLocked(key string, fetch Fetch[V], background bool) *flight[V] {
	f, ok := c.flights[key]
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
		f = &flight[V]{key: key, done: make(chan struct{}), background: background, cancel: cancel}
		c.flights[key] = f
		go c.run(ctx, key, f, fetch)
	}
	if !background {
		f.waiters++
	}
	return f
}

func (c *Cache[V]) run(ctx context.Context, key string, f *flight[V], fetch Fetch[V]) {
	defer f.cancel()
	val, cost, err := safely(ctx, fetch)
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	f.val, f.err, f.fetched = val, err, now
	close(f.done)
	switch {
	case f.detached:
	case err == nil:
		c.storeLocked(&entry[V]{key: key, val: val, cost: cost, fetched: now})
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		// nobody waited any more: nothing learned
	case c.opts.FailureTTL < 0:
	case f.background && c.hasValueLocked(key):
		// a failed revalidation keeps serving the stale value until MaxStale
	default:
		c.storeLocked(&entry[V]{key: key, err: err, fetched: now})
	}
}

func (c *Cache[V]) hasValueLocked(key string) bool {
	el, ok := c.items[key]
	return ok && el.Value.(*entry[V]).err == nil
}

// wait waits for f or for ctx; the last waiter to leave cancels f.
func (c *Cache[V]) wait(ctx context.Context, f *flight[V]) (Result[V], error) {
	select {
	case <-f.done:
		c.leave(f)
		if f.err != nil {
			return Result[V]{}, f.err
		}
		return Result[V]{Val: f.val, Fetched: f.fetched}, nil
	case <-ctx.Done():
		c.leave(f)
		return Result[V]{}, ctx.Err()
	}
}

func (c *Cache[V]) leave(f *flight[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f.waiters--
	if f.waiters == 0 && !f.background {
		// Nobody waits: stop the fetch, and let the next caller start anew.
		f.cancel()
		if c.flights[f.key] == f {
			delete(c.flights, f.key)
		}
	}
}

// Add stores a value fetched elsewhere.
func (c *Cache[V]) Add(key string, val V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeLocked(&entry[V]{key: key, val: val, cost: cost, fetched: c.opts.Now()})
}

// ForgetIf drops key's value when stale says it is wrong (content it
// names turned out missing or refused), so the next Get fetches it again
// instead of answering from it until its TTL. A newer value stale does not
// recognise is kept.
func (c *Cache[V]) ForgetIf(key string, stale func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return
	}
	e := el.Value.(*entry[V])
	if e.err != nil || !stale(e.val) {
		return
	}
	c.ll.Remove(el)
	delete(c.items, key)
	c.cost -= e.cost
}

// Peek returns a value without fetching, fresh or stale.
func (c *Cache[V]) Peek(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[V])
	if e.err != nil || !e.expires.IsZero() && !c.opts.Now().Before(e.expires.Add(c.opts.MaxStale)) {
		return zero, false
	}
	return e.val, true
}

// Fresh returns the value for key when the cache holds it fresh (counted
// as a hit), and never fetches: for callers that can skip work before a
// Get when the answer is at hand.
func (c *Cache[V]) Fresh(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*entry[V])
		if e.err == nil && (e.expires.IsZero() || c.opts.Now().Before(e.expires)) {
			c.ll.MoveToFront(el)
			c.observeLocked("hit")
			return e.val, true
		}
	}
	var zero V
	return zero, false
}

// Cost is the entries' total cost: about the bytes they hold.
func (c *Cache[V]) Cost() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cost
}

// Len is the number of entries.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

func (c *Cache[V]) storeLocked(e *entry[V]) {
	if e.err == nil && c.opts.TTL > 0 {
		e.expires = e.fetched.Add(c.opts.TTL)
	}
	if x, ok := any(e.val).(Expirer); ok && e.err == nil {
		if t := x.Expires(); !t.IsZero() && (e.expires.IsZero() || t.Before(e.expires)) {
			e.expires = t
		}
	}
	e.cost += c.opts.EntryCost + int64(len(e.key))
	if el, ok := c.items[e.key]; ok {
		c.cost -= el.Value.(*entry[V]).cost
		el.Value = e
		c.ll.MoveToFront(el)
	} else {
		c.items[e.key] = c.ll.PushFront(e)
	}
	c.cost += e.cost
	for c.ll.Len() > c.opts.MaxEntries || c.opts.MaxCost > 0 && c.cost > c.opts.MaxCost && c.ll.Len() > 1 {
		last := c.ll.Back()
		old := last.Value.(*entry[V])
		c.ll.Remove(last)
		delete(c.items, old.key)
		c.cost -= old.cost
	}
}

func (c *Cache[V]) observe(result string) {
	if c.opts.Observe != nil {
		c.opts.Observe(c.opts.Name, result)
	}
}

func (c *Cache[V]) observeLocked(result string) { c.observe(result) }

// safely runs a fetch, turning a panic into a *PanicError: a fetch runs
// in a goroutine of its own, where a panic would end the process. The
// error is remembered like any failure, so the same input does not panic
// again for every caller.
func safely[V any](ctx context.Context, fetch Fetch[V]) (val V, cost int64, err error) {
	err = Recover(func() (err error) {
		val, cost, err = fetch(ctx)
		return err
	})
	return val, cost, err
}

// PanicError is a panic recovered in a goroutine the process runs in the
// background (a fetch, one branch of a fan-out): a bug met by some input,
// turned into an error so that one request fails instead of the process.
type PanicError struct {
	Value any
	Stack []byte
	once  sync.Once
}

func (e *PanicError) Error() string { return fmt.Sprintf("internal error: panic: %v", e.Value) }

// FirstReport reports true once per PanicError, however many callers get
// it (a remembered failure is shared): whoever logs it logs it once.
func (e *PanicError) FirstReport() bool {
	first := false
	e.once.Do(func() { first = true })
	return first
}

// Recover runs fn, returning a panic as a *PanicError: the recovery
// boundary of a goroutine that runs for a request.
func Recover(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return fn()
}
