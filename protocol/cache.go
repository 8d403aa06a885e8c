package protocol

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// cache is a bounded LRU map with an optional time to live. Tag lists and
// tag→digest resolutions live for a short TTL, so a re-pushed tag shows up
// quickly; content addressed by digest never changes and lives until
// evicted. Errors are never cached.
type cache[V any] struct {
	name string
	ttl  time.Duration // 0: no expiry
	max  int
	now  func() time.Time

	mu    sync.Mutex
	ll    *list.List
	items map[string]*list.Element

	group   singleflight.Group
	metrics *metrics
	// hits and misses are the cache's pre-resolved metric children: a
	// label lookup per request costs more than the cache lookup itself.
	hits, misses prometheus.Counter
}

type cacheEntry[V any] struct {
	key     string
	val     V
	expires time.Time
}

func newCache[V any](name string, max int, ttl time.Duration, m *metrics) *cache[V] {
	if max <= 0 {
		max = 1
	}
	c := &cache[V]{name: name, ttl: ttl, max: max, now: time.Now, ll: list.New(), items: map[string]*list.Element{}, metrics: m}
	if m != nil {
		c.hits, c.misses = m.cache.WithLabelValues(name, "hit"), m.cache.WithLabelValues(name, "miss")
	}
	return c
}

// expiry collects, through a request's context, the earliest expiry of the
// time-limited cache entries (tag lists, tag resolutions) an answer was
// derived from, so that the encoded answer is cached no longer than they.
type expiry struct {
	// at is the time archive URLs in the answer are signed as of.
	at  time.Time
	mu  sync.Mutex
	min time.Time // zero: nothing time-limited seen
}

type expiryKey struct{}

func withExpiry(ctx context.Context) (context.Context, *expiry) {
	e := &expiry{}
	return context.WithValue(ctx, expiryKey{}, e), e
}

// observe lowers the expiry to t (a zero t never expires).
func (e *expiry) observe(t time.Time) {
	if e == nil || t.IsZero() {
		return
	}
	e.mu.Lock()
	if e.min.IsZero() || t.Before(e.min) {
		e.min = t
	}
	e.mu.Unlock()
}

func (e *expiry) until() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.min
}

func expiryFrom(ctx context.Context) *expiry {
	e, _ := ctx.Value(expiryKey{}).(*expiry)
	return e
}

func (c *cache[V]) get(key string) (V, bool) {
	v, _, ok := c.getExp(key)
	return v, ok
}

// getExp is get that also returns when the entry expires (zero: never).
func (c *cache[V]) getExp(key string) (V, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, time.Time{}, false
	}
	e := el.Value.(*cacheEntry[V])
	if c.ttl > 0 && !c.now().Before(e.expires) {
		c.ll.Remove(el)
		delete(c.items, key)
		return zero, time.Time{}, false
	}
	c.ll.MoveToFront(el)
	return e.val, e.expires, true
}

func (c *cache[V]) add(key string, v V) time.Time {
	return c.addUntil(key, v, time.Time{})
}

// addUntil adds an entry that expires after the cache's TTL or at until,
// whichever comes first, and returns its expiry (zero: never).
func (c *cache[V]) addUntil(key string, v V, until time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var exp time.Time
	if c.ttl > 0 {
		exp = c.now().Add(c.ttl)
		if !until.IsZero() && until.Before(exp) {
			exp = until
		}
	}
	if el, ok := c.items[key]; ok {
		el.Value = &cacheEntry[V]{key: key, val: v, expires: exp}
		c.ll.MoveToFront(el)
		return exp
	}
	c.items[key] = c.ll.PushFront(&cacheEntry[V]{key: key, val: v, expires: exp})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry[V]).key)
	}
	return exp
}

func (c *cache[V]) count(m prometheus.Counter) {
	if m != nil {
		m.Inc()
	}
}

// do returns the cached value for key or computes it once, however many
// callers ask at the same time (singleflight). The computation runs with
// its own deadline, detached from the first caller's cancellation, so one
// client hanging up does not fail the others waiting on the same call;
// each caller still stops waiting when its own context ends. The expiry of
// the value returned is reported to the context's expiry collector.
func (c *cache[V]) do(ctx context.Context, key string, timeout time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	if v, exp, ok := c.getExp(key); ok {
		c.count(c.hits)
		expiryFrom(ctx).observe(exp)
		return v, nil
	}
	c.count(c.misses)
	ch := c.group.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		v, err := fetch(fctx)
		if err != nil {
			return nil, err
		}
		return cacheEntry[V]{key: key, val: v, expires: c.add(key, v)}, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			var zero V
			return zero, r.Err
		}
		e := r.Val.(cacheEntry[V])
		expiryFrom(ctx).observe(e.expires)
		return e.val, nil
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}
