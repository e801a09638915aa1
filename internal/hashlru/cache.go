// Package hashlru holds the least-recently-used caches under herald's
// correlator, rate limiter and events.k8s.io writer: golang-lru's simplelru keyed by a 64-bit
// hash the caller computes once per key, so that a large struct key is
// hashed once per event, compared once on a hit, never hashed again by a
// map, and built only when it is stored. The rare keys that share a hash
// live together in one entry.
//
// Nothing here is safe for concurrent use: the owner holds its own lock,
// as golang-lru's Cache does around simplelru.
package hashlru

import (
	"iter"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache maps keys of type K to values of type V, holding at most Size
// keys; adding one more forgets the least recently used. Values live in
// the cache and are updated in place through the pointers Get and Add
// return.
//
// A key is looked up by its hash and a match function, which reports
// whether a stored key is the one sought, and built only to be stored:
// the caller need not build a large key to find it.
//
// Keys whose hashes are equal share one entry of the underlying LRU: they
// are used, and forgotten, together. That costs the precision of the LRU
// order, never a wrong answer; with 64-bit seeded hashes it does not
// happen in practice.
//
// Its zero value is not usable: create one with New.
type Cache[K, V any] struct {
	lru     *simplelru.LRU[uint64, *node[K, V]]
	size    int
	n       int         // keys held, at most size
	evicted uint64      // keys forgotten to make room
	free    *node[K, V] // forgotten nodes, for Add to reuse
}

// node is one key and its value; next is another key with the same hash.
type node[K, V any] struct {
	key  K
	val  V
	next *node[K, V]
}

// New returns a Cache of at most size keys. It panics if size < 1.
func New[K, V any](size int) *Cache[K, V] {
	if size < 1 {
		panic("hashlru: size must be positive")
	}
	// simplelru returns an error only for a size below 1. Its eviction
	// callback is not used: Add evicts by hand, to count forgotten keys
	// and reuse their nodes.
	l, _ := simplelru.NewLRU[uint64, *node[K, V]](size, nil)
	return &Cache[K, V]{lru: l, size: size}
}

// find returns the node in the chain starting at n whose key matches, or
// nil.
func find[K, V any](n *node[K, V], match func(*K) bool) *node[K, V] {
	for ; n != nil; n = n.next {
		if match(&n.key) {
			return n
		}
	}
	return nil
}

// Get returns a pointer to the value of the key whose hash is h and which
// match accepts, and marks it most recently used. The pointer is valid
// until the key is forgotten.
func (c *Cache[K, V]) Get(h uint64, match func(*K) bool) (*V, bool) {
	first, ok := c.lru.Get(h)
	if !ok {
		return nil, false
	}
	if n := find(first, match); n != nil {
		return &n.val, true
	}
	return nil, false
}

// Peek is Get without marking the key used.
func (c *Cache[K, V]) Peek(h uint64, match func(*K) bool) (*V, bool) {
	first, ok := c.lru.Peek(h)
	if !ok {
		return nil, false
	}
	if n := find(first, match); n != nil {
		return &n.val, true
	}
	return nil, false
}

// Touch marks the entry of hash h most recently used, as Get does, for a
// caller that already found its key with Peek.
func (c *Cache[K, V]) Touch(h uint64) { c.lru.Get(h) }

// GetOrAdd is Get, and when no key matches, Add of key(): found reports
// which, and recycled is Add's.
func (c *Cache[K, V]) GetOrAdd(h uint64, match func(*K) bool, key func() K) (v *V, found, recycled bool) {
	first, ok := c.lru.Get(h)
	if ok {
		if n := find(first, match); n != nil {
			return &n.val, true, false
		}
	}
	v, recycled = c.add(h, key(), ok)
	return v, false, recycled
}

// Add inserts key, whose hash is h and which must not be in the cache, as
// the most recently used, and returns a pointer to its value for the
// caller to set. When the cache is full, the least recently used key is
// forgotten first and its node reused: the value then still holds the
// forgotten key's value (recycled reports so), whose buffers the caller
// may reuse; otherwise it is the zero value.
func (c *Cache[K, V]) Add(h uint64, key K) (v *V, recycled bool) {
	return c.add(h, key, c.lru.Contains(h))
}

// add is Add, told whether an entry of hash h exists.
func (c *Cache[K, V]) add(h uint64, key K, shared bool) (v *V, recycled bool) {
	for c.n >= c.size {
		if c.evictOldest() == h {
			shared = false // the entry of h itself was the oldest
		}
	}
	n := c.free
	if n != nil {
		c.free, n.next = n.next, nil
		recycled = true
	} else {
		n = new(node[K, V])
	}
	n.key = key
	if shared {
		// Rare: another key has this hash. Chain behind it; the entry
		// becomes the most recently used.
		first, _ := c.lru.Get(h)
		n.next, first.next = first.next, n
	} else {
		c.lru.Add(h, n) // never evicts: the LRU holds at most c.n < size entries
	}
	c.n++
	return &n.val, recycled
}

// evictOldest forgets the least recently used entry, one key or all the
// keys sharing its hash, and returns that hash.
func (c *Cache[K, V]) evictOldest() uint64 {
	h, n, ok := c.lru.RemoveOldest()
	if !ok {
		panic("hashlru: keys counted but none held") // unreachable: c.n counts the LRU's keys
	}
	for n != nil {
		// The node keeps its key and value until it is reused: Add,
		// which evicts to make room, overwrites the key at once, and
		// the nodes held never outnumber the keys the cache holds when
		// full. Clearing the key here would write it twice.
		next := n.next
		c.release(n)
		c.evicted++
		n = next
	}
	return h
}

// Remove forgets the key whose hash is h and which match accepts, and
// reports whether the cache held it. The other keys of the same hash, if
// any, become the most recently used.
func (c *Cache[K, V]) Remove(h uint64, match func(*K) bool) bool {
	first, ok := c.lru.Peek(h)
	if !ok {
		return false
	}
	var prev *node[K, V]
	for n := first; n != nil; prev, n = n, n.next {
		if !match(&n.key) {
			continue
		}
		switch {
		case prev != nil:
			prev.next = n.next
			c.lru.Get(h) // as when n heads the entry
		case n.next != nil:
			c.lru.Add(h, n.next) // rare: the next key of the hash heads the entry now
		default:
			c.lru.Remove(h)
		}
		c.release(n)
		return true
	}
	return false
}

// RemoveOldest forgets the least recently used key and returns it and
// its value, or reports false if the cache is empty: for an owner that
// deals with a key before it makes room for another (Add then forgets
// none). The other keys of its hash, if any, become the most recently
// used.
func (c *Cache[K, V]) RemoveOldest() (key K, val V, ok bool) {
	h, first, ok := c.lru.GetOldest()
	if !ok {
		return key, val, false
	}
	key, val = first.key, first.val
	if first.next != nil {
		c.lru.Add(h, first.next) // rare: the next key of the hash heads the entry now
	} else {
		c.lru.Remove(h)
	}
	c.release(first)
	return key, val, true
}

// release puts n, no longer held, on the free list. It keeps its key and
// value until Add reuses it (see evictOldest).
func (c *Cache[K, V]) release(n *node[K, V]) {
	n.next, c.free = c.free, n
	c.n--
}

// All returns the keys and values held, least recently used first,
// without marking them used. The loop may Remove the key it is given; any
// other change to the cache during the loop leaves the keys it yields
// unspecified.
func (c *Cache[K, V]) All() iter.Seq2[*K, *V] {
	return func(yield func(*K, *V) bool) {
		for _, h := range c.lru.Keys() {
			first, ok := c.lru.Peek(h)
			if !ok {
				continue
			}
			for n := first; n != nil; {
				next := n.next // before yield, which may remove n
				if !yield(&n.key, &n.val) {
					return
				}
				n = next
			}
		}
	}
}

// Len returns the number of keys held.
func (c *Cache[K, V]) Len() int { return c.n }

// Evicted returns how many keys were forgotten to make room.
func (c *Cache[K, V]) Evicted() uint64 { return c.evicted }
