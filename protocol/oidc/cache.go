package oidc

import (
	"container/list"
	"sync"
	"time"
)

// cacheEntry is a verified token: its payload, decoded again for each
// caller so no two share a claims map.
type cacheEntry struct {
	issuer, subject string
	expiry          time.Time
	payload         []byte

	key   [32]byte
	until time.Time
	elem  *list.Element
}

// tokenCache remembers verified tokens by their sha256 until their until
// time, at most max of them: when full, the oldest inserted is forgotten.
type tokenCache struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]*cacheEntry
	order   *list.List // oldest first
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, entries: make(map[[32]byte]*cacheEntry), order: list.New()}
}

func (c *tokenCache) get(key [32]byte, now time.Time) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if !now.Before(e.until) {
		c.remove(e)
		return nil, false
	}
	return e, true
}

func (c *tokenCache) put(key [32]byte, e *cacheEntry, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.remove(old)
	}
	for len(c.entries) >= c.max {
		c.remove(c.order.Front().Value.(*cacheEntry))
	}
	e.key, e.until = key, until
	e.elem = c.order.PushBack(e)
	c.entries[key] = e
}

func (c *tokenCache) remove(e *cacheEntry) {
	c.order.Remove(e.elem)
	delete(c.entries, e.key)
}
