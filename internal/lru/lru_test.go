package lru_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/heraldgo/herald/internal/lru"
)

func add(c *lru.Cache[string, int], k string, h uint64, v int) {
	p, _ := c.Add(k, h)
	*p = v
}

func get(c *lru.Cache[string, int], k string, h uint64) (int, bool) {
	p, ok := c.Get(k, h)
	if !ok {
		return 0, false
	}
	return *p, true
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := lru.New[string, int](2)
	add(c, "a", 1, 1)
	add(c, "b", 2, 2)
	get(c, "a", 1) // b is now the least recently used
	p, recycled := c.Add("c", 3)
	if !recycled || *p != 2 {
		t.Errorf("Add to a full cache: recycled %v value %d, want true and b's old value 2", recycled, *p)
	}
	*p = 3
	if _, ok := get(c, "b", 2); ok {
		t.Error("b still present")
	}
	if v, ok := get(c, "a", 1); !ok || v != 1 {
		t.Errorf("a = %d, %v; want 1, true", v, ok)
	}
	if c.Len() != 2 || c.Evicted() != 1 {
		t.Errorf("Len %d Evicted %d, want 2 1", c.Len(), c.Evicted())
	}
}

func TestPeekDoesNotRefresh(t *testing.T) {
	c := lru.New[string, int](2)
	add(c, "a", 1, 1)
	add(c, "b", 2, 2)
	if p, ok := c.Peek("a", 1); !ok || *p != 1 {
		t.Fatal("Peek missed a")
	}
	add(c, "c", 3, 3) // a is still the least recently used
	if _, ok := get(c, "a", 1); ok {
		t.Error("Peek refreshed a")
	}
}

// TestHashCollisions gives every key the same hash: the cache must still
// tell keys apart and evict the right one.
func TestHashCollisions(t *testing.T) {
	c := lru.New[string, int](3)
	for i, k := range []string{"a", "b", "c", "d"} {
		add(c, k, 42, i)
	}
	if _, ok := get(c, "a", 42); ok {
		t.Error("a should have been evicted")
	}
	for i, k := range []string{"b", "c", "d"} {
		if v, ok := get(c, k, 42); !ok || v != i+1 {
			t.Errorf("%s = %d, %v; want %d", k, v, ok, i+1)
		}
	}
}

// TestAgainstModel runs random operations against a simple model of an
// LRU cache, with few hash values so that chains are common.
func TestAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 5
	c := lru.New[int, int](size)
	var order []int // model: most recently used last
	vals := map[int]int{}
	touch := func(k int) {
		for i, o := range order {
			if o == k {
				order = append(order[:i], order[i+1:]...)
				break
			}
		}
		order = append(order, k)
	}
	for step := range 20000 {
		k := rng.IntN(12)
		h := uint64(k % 3)
		if rng.IntN(2) == 0 {
			p, ok := c.Get(k, h)
			_, want := vals[k]
			if ok != want || ok && *p != vals[k] {
				t.Fatalf("step %d: Get(%d) = %v, want present %v value %d", step, k, ok, want, vals[k])
			}
			if ok {
				touch(k)
			}
			continue
		}
		if _, ok := vals[k]; ok {
			continue // Add requires absence
		}
		p, _ := c.Add(k, h)
		*p = step
		vals[k] = step
		touch(k)
		if len(order) > size {
			delete(vals, order[0])
			order = order[1:]
		}
		if c.Len() != len(order) {
			t.Fatalf("step %d: Len %d, model %d", step, c.Len(), len(order))
		}
	}
}

func TestNewPanicsOnSize(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(0) did not panic")
		}
	}()
	lru.New[int, int](0)
}

func TestRemoveAndAll(t *testing.T) {
	c := lru.New[string, int](4)
	for i, k := range []string{"a", "b", "c"} {
		add(c, k, uint64(i%2), i) // a and c share a hash
	}
	if !c.Remove("a", 0) || c.Remove("a", 0) {
		t.Error("Remove: want true, then false")
	}
	var keys []string
	for k, v := range c.All() {
		keys = append(keys, fmt.Sprint(k, "=", *v))
	}
	if got := strings.Join(keys, " "); got != "c=2 b=1" {
		t.Errorf("All() = %s, want c=2 b=1 (most recent first)", got)
	}
	if v, ok := get(c, "c", 0); !ok || v != 2 {
		t.Error("c lost when a, on its hash chain, was removed")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}
}
