package protocol

import (
	"container/list"
	"context"
	"sync"
	"time"

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
	return &cache[V]{name: name, ttl: ttl, max: max, now: time.Now, ll: list.New(), items: map[string]*list.Element{}, metrics: m}
}

func (c *cache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cacheEntry[V])
	if c.ttl > 0 && !c.now().Before(e.expires) {
		c.ll.Remove(el)
		delete(c.items, key)
		return zero, false
	}
	c.ll.MoveToFront(el)
	return e.val, true
}

func (c *cache[V]) add(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var exp time.Time
	if c.ttl > 0 {
		exp = c.now().Add(c.ttl)
	}
	if el, ok := c.items[key]; ok {
		el.Value = &cacheEntry[V]{key: key, val: v, expires: exp}
		c.ll.MoveToFront(el)
		return
	}
	c.items[key] = c.ll.PushFront(&cacheEntry[V]{key: key, val: v, expires: exp})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry[V]).key)
	}
}

func (c *cache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// do returns the cached value for key or computes it once, however many
// callers ask at the same time (singleflight). The computation runs with
// its own deadline, detached from the first caller's cancellation, so one
// client hanging up does not fail the others waiting on the same call;
// each caller still stops waiting when its own context ends.
func (c *cache[V]) do(ctx context.Context, key string, timeout time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	if v, ok := c.get(key); ok {
		c.metrics.cacheHit(c.name)
		return v, nil
	}
	c.metrics.cacheMiss(c.name)
	ch := c.group.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		v, err := fetch(fctx)
		if err != nil {
			return nil, err
		}
		c.add(key, v)
		return v, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			var zero V
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}
