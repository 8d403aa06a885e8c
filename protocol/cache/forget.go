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
