// Package lru is a least-recently-used cache tuned for herald's hot paths:
// the caller passes each key's hash, computed once, so that large struct
// keys are hashed once per event rather than once per map operation; values
// live inside the entries; and a full cache reuses the entry it evicts, so
// that steady state allocates nothing.
//
// A Cache is not safe for concurrent use; its owner locks.
package lru

import "iter"

// Cache maps keys to values, keeping at most Size entries; adding one more
// evicts the least recently used. Its zero value is not usable; create one
// with New.
type Cache[K comparable, V any] struct {
	size    int
	byHash  map[uint64]*entry[K, V] // first entry of each hash's chain
	head    entry[K, V]             // sentinel: head.next is the most recently used
	n       int
	evicted uint64
}

type entry[K comparable, V any] struct {
	key        K
	hash       uint64
	val        V
	prev, next *entry[K, V] // recency list
	chain      *entry[K, V] // next entry with the same hash (rare)
}

// New returns a Cache of at most size entries. It panics if size < 1.
func New[K comparable, V any](size int) *Cache[K, V] {
	if size < 1 {
		panic("lru: size must be positive")
	}
	c := &Cache[K, V]{size: size, byHash: make(map[uint64]*entry[K, V], min(size, 1024))}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

// Get returns a pointer to the value of key, whose hash is h, and marks it
// most recently used. The pointer is valid until the entry is evicted.
func (c *Cache[K, V]) Get(key K, h uint64) (*V, bool) {
	for e := c.byHash[h]; e != nil; e = e.chain {
		if e.key == key {
			c.moveToFront(e)
			return &e.val, true
		}
	}
	return nil, false
}

// Peek is Get without marking the entry used.
func (c *Cache[K, V]) Peek(key K, h uint64) (*V, bool) {
	for e := c.byHash[h]; e != nil; e = e.chain {
		if e.key == key {
			return &e.val, true
		}
	}
	return nil, false
}

// Add inserts key, which must not be present, as the most recently used
// entry and returns a pointer to its value, which the caller sets. When the
// cache is full, the least recently used entry is evicted and its memory
// reused: the value then holds the evicted entry's value (recycled reports
// so), whose buffers the caller may reuse.
func (c *Cache[K, V]) Add(key K, h uint64) (v *V, recycled bool) {
	var e *entry[K, V]
	if c.n >= c.size {
		e = c.head.prev
		c.unlink(e)
		c.evicted++
		recycled = true
	} else {
		e = &entry[K, V]{}
		c.n++
	}
	e.key, e.hash = key, h
	e.chain = c.byHash[h]
	c.byHash[h] = e
	e.next, e.prev = c.head.next, &c.head
	c.head.next.prev = e
	c.head.next = e
	return &e.val, recycled
}

// Remove deletes key, whose hash is h, and reports whether it was present.
func (c *Cache[K, V]) Remove(key K, h uint64) bool {
	for e := c.byHash[h]; e != nil; e = e.chain {
		if e.key == key {
			c.unlink(e)
			c.n--
			return true
		}
	}
	return false
}

// All returns the entries, most recently used first, with pointers to
// their values. The cache must not be changed during the iteration
// (collect keys to Remove, then remove them).
func (c *Cache[K, V]) All() iter.Seq2[K, *V] {
	return func(yield func(K, *V) bool) {
		for e := c.head.next; e != &c.head; e = e.next {
			if !yield(e.key, &e.val) {
				return
			}
		}
	}
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int { return c.n }

// Evicted returns how many entries were evicted to make room.
func (c *Cache[K, V]) Evicted() uint64 { return c.evicted }

func (c *Cache[K, V]) moveToFront(e *entry[K, V]) {
	if c.head.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.next, e.prev = c.head.next, &c.head
	c.head.next.prev = e
	c.head.next = e
}

// unlink removes e from the recency list and from its hash chain.
func (c *Cache[K, V]) unlink(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	if first := c.byHash[e.hash]; first == e {
		if e.chain == nil {
			delete(c.byHash, e.hash)
		} else {
			c.byHash[e.hash] = e.chain
		}
	} else {
		for p := first; p != nil; p = p.chain {
			if p.chain == e {
				p.chain = e.chain
				break
			}
		}
	}
	e.chain = nil
}
