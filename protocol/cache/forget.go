package cache

// Forget drops key's entry (a value or a remembered failure), so the next
// Get fetches it again: for a value its holder knows to be outdated
// earlier than the cache could (a document whose policy decisions ran out).
// A fetch under way is not affected.
func (c *Cache[V]) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.Remove(el)
		delete(c.items, key)
		c.cost -= el.Value.(*entry[V]).cost
	}
}

// ForgetMatching drops every entry whose key match accepts (values and
// remembered failures), and detaches the fetches under way for such
// keys: what they read may predate whatever made the caller forget (a
// registry notification of a push), so it is handed to the callers
// already waiting but not kept, and the next Get fetches anew. It walks
// every entry once: callers batch what they forget.
func (c *Cache[V]) ForgetMatching(match func(key string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for key, el := range c.items {
		if match(key) {
			c.ll.Remove(el)
			delete(c.items, key)
			c.cost -= el.Value.(*entry[V]).cost
			n++
		}
	}
	for key, f := range c.flights {
		if match(key) {
			f.detached = true
			delete(c.flights, key)
		}
	}
	return n
}
