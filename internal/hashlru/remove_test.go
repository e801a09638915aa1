package hashlru

import (
	"slices"
	"testing"
)

// keys returns the keys of c as All yields them, least recently used
// first.
func keys(c *Cache[string, int]) []string {
	var got []string
	for k := range c.All() {
		got = append(got, *k)
	}
	return got
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name    string
		add     []string // added in order, each with hash 1 if it starts with "x", else its own
		remove  string
		want    bool
		wantAll []string
	}{
		{"a key alone in its entry", []string{"a", "b", "c"}, "b", true, []string{"a", "c"}},
		{"a key not held", []string{"a", "b"}, "z", false, []string{"a", "b"}},
		{"the first key of a shared hash", []string{"x1", "b", "x2"}, "x1", true, []string{"b", "x2"}},
		{"a later key of a shared hash", []string{"x1", "x2", "b"}, "x2", true, []string{"b", "x1"}},
		{"a key whose hash another holds", []string{"x1", "b"}, "x2", false, []string{"x1", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New[string, int](8)
			for i, k := range tc.add {
				v, _ := c.Add(testHash(k), k)
				*v = i
			}
			if got := c.Remove(testHash(tc.remove), is(tc.remove)); got != tc.want {
				t.Errorf("Remove(%q) = %v, want %v", tc.remove, got, tc.want)
			}
			if got := keys(c); !slices.Equal(got, tc.wantAll) || c.Len() != len(tc.wantAll) {
				t.Errorf("after Remove(%q): All() = %q, Len() = %d; want %q", tc.remove, got, c.Len(), tc.wantAll)
			}
		})
	}
}

// testHash gives every key starting with "x" the hash 1, and every other
// key a hash of its own.
func testHash(k string) uint64 {
	if k[0] == 'x' {
		return 1
	}
	return uint64(k[0])
}

func TestRemoveOldest(t *testing.T) {
	c := New[string, int](3)
	if _, _, ok := c.RemoveOldest(); ok {
		t.Fatal("RemoveOldest() on an empty cache reported a key")
	}
	for i, k := range []string{"a", "b", "c"} {
		v, _ := c.Add(testHash(k), k)
		*v = i + 1
	}
	c.Get(testHash("a"), is("a")) // b is now the oldest
	k, v, ok := c.RemoveOldest()
	if !ok || k != "b" || v != 2 {
		t.Fatalf("RemoveOldest() = %q, %d, %v; want b, 2, true", k, v, ok)
	}
	if _, recycled := c.Add(testHash("d"), "d"); !recycled || c.Evicted() != 0 || c.Len() != 3 {
		t.Errorf("Add after RemoveOldest: recycled %v, Evicted() %d, Len() %d; want the node reused, nothing evicted, 3 keys",
			recycled, c.Evicted(), c.Len())
	}
	if got, want := keys(c), []string{"c", "a", "d"}; !slices.Equal(got, want) {
		t.Errorf("All() = %q, want %q", got, want)
	}
}

// TestAllRemovingAsItGoes: the loop over All may remove the key it is
// given, shared hashes included, and still sees every key once.
func TestAllRemovingAsItGoes(t *testing.T) {
	c := New[string, int](8)
	add := []string{"x1", "a", "x2", "b", "x3"}
	for _, k := range add {
		c.Add(testHash(k), k)
	}
	var seen []string
	for k := range c.All() {
		seen = append(seen, *k)
		if (*k)[0] == 'x' || *k == "b" {
			c.Remove(testHash(*k), is(*k))
		}
	}
	slices.Sort(seen)
	if want := []string{"a", "b", "x1", "x2", "x3"}; !slices.Equal(seen, want) {
		t.Errorf("All() while removing yielded %q, want each key once: %q", seen, want)
	}
	if got := keys(c); !slices.Equal(got, []string{"a"}) || c.Len() != 1 {
		t.Errorf("left %q (Len() %d), want only a", got, c.Len())
	}
}

// FuzzCacheRemove runs a script of Add, Remove and RemoveOldest calls on
// a Cache of 4 keys whose hashes collide often, against the model of
// FuzzCache: each byte picks a key (low 3 bits) and a call (top 2 bits:
// GetOrAdd, Remove, RemoveOldest, or a look at All). The cache holds
// exactly the model's keys with their values, and RemoveOldest takes a key
// of the model's least recently used hash.
func FuzzCacheRemove(f *testing.F) {
	f.Add([]byte{0, 3, 6, 0x40, 1, 0x80, 0xc0, 4, 0x43})
	f.Add([]byte{0, 1, 2, 3, 4, 0x80, 0x80, 0x80, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, script []byte) {
		const size = 4
		hashOf := func(k int) uint64 { return uint64(k % 3) }
		c := New[int, int](size)
		m := &model{size: size, vals: map[int]int{}}
		for i, b := range script {
			k, call := int(b&7), b>>6
			h := hashOf(k)
			switch call {
			case 0:
				v, found, _ := c.GetOrAdd(h, is(k), func() int { return k })
				if want, ok := m.get(k, hashOf, true); found != ok || found && *v != want {
					t.Fatalf("op %d: GetOrAdd(%d) found %v (%d), model %v (%d)", i, k, found, *v, ok, want)
				}
				if !found {
					*v = i + 1
					m.add(k, hashOf, i+1)
				}
			case 1:
				_, want := m.vals[k]
				if got := c.Remove(h, is(k)); got != want {
					t.Fatalf("op %d: Remove(%d) = %v, want %v", i, k, got, want)
				}
				m.remove(k, hashOf)
			case 2:
				key, val, ok := c.RemoveOldest()
				if ok != (len(m.vals) > 0) || ok && (hashOf(key) != m.order[0] || m.vals[key] != val) {
					t.Fatalf("op %d: RemoveOldest() = %d, %d, %v; model %v, oldest hash %v", i, key, val, ok, m.vals, m.order)
				}
				if ok {
					m.remove(key, hashOf)
				}
			default:
				n := 0
				for key, v := range c.All() {
					if want, ok := m.vals[*key]; !ok || *v != want {
						t.Fatalf("op %d: All() yielded %d: %d, model %v", i, *key, *v, m.vals)
					}
					n++
				}
				if n != len(m.vals) {
					t.Fatalf("op %d: All() yielded %d keys, model %v", i, n, m.vals)
				}
			}
			if c.Len() != len(m.vals) || c.Evicted() != m.evicted {
				t.Fatalf("op %d: Len() = %d, Evicted() = %d; model %d, %d", i, c.Len(), c.Evicted(), len(m.vals), m.evicted)
			}
		}
	})
}

// remove forgets k; another key of its hash makes the hash the most
// recently used, as Remove documents.
func (m *model) remove(k int, hashOf func(int) uint64) {
	if _, ok := m.vals[k]; !ok {
		return
	}
	delete(m.vals, k)
	h := hashOf(k)
	for key := range m.vals {
		if hashOf(key) == h {
			m.touch(h)
			return
		}
	}
	m.order = slices.DeleteFunc(m.order, func(o uint64) bool { return o == h })
}
