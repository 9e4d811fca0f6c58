package chart

import (
	"container/list"
	"sync"
)

// lru is a least-recently-used cache bounded by the summed cost of its
// entries (their size in bytes) and, optionally, by their number. It is safe
// for concurrent use. Values must not be changed once added.
type lru[K comparable, V any] struct {
	mu         sync.Mutex
	max        int64 // summed cost; <= 0: unbounded
	maxEntries int   // <= 0: unbounded
	used       int64
	order      *list.List // front = most recently used
	entries    map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
	cost  int64
}

// newLRU returns an empty cache holding at most maxCost in summed cost and
// maxEntries entries; a bound of 0 or less does not apply.
func newLRU[K comparable, V any](maxCost int64, maxEntries int) *lru[K, V] {
	return &lru[K, V]{max: maxCost, maxEntries: maxEntries, order: list.New(), entries: map[K]*list.Element{}}
}

// get returns the value for key and marks it used.
func (c *lru[K, V]) get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).value, true
}

// add stores value under key, replacing any previous one, and evicts the
// least recently used entries until both bounds hold. An entry costlier
// than the whole cache is not stored: keeping it would evict everything else.
func (c *lru[K, V]) add(key K, value V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	if c.max > 0 && cost > c.max {
		return
	}
	c.entries[key] = c.order.PushFront(&lruEntry[K, V]{key: key, value: value, cost: cost})
	c.used += cost
	for c.over() {
		c.remove(c.order.Back().Value.(*lruEntry[K, V]).key)
	}
}

// over reports whether a bound is exceeded; the caller holds mu.
func (c *lru[K, V]) over() bool {
	return (c.max > 0 && c.used > c.max) || (c.maxEntries > 0 && len(c.entries) > c.maxEntries)
}

// remove drops key; the caller holds mu.
func (c *lru[K, V]) remove(key K) {
	el, ok := c.entries[key]
	if !ok {
		return
	}
	c.order.Remove(el)
	delete(c.entries, key)
	c.used -= el.Value.(*lruEntry[K, V]).cost
}
