package hashlru

import (
	"slices"
	"testing"
)

// op is one operation on a Cache[string, int]: get (Get, and Add with the
// value if missing), peek (Peek only).
type op struct {
	do    string // "get" or "peek"
	key   string
	h     uint64
	val   int  // what get adds when the key is missing
	want  int  // the value found; 0: missing
	recyc bool // get must add, reusing a forgotten node
}

// run applies ops to c, failing on the first unexpected answer.
func run(t *testing.T, c *Cache[string, int], ops []op) {
	t.Helper()
	for i, o := range ops {
		var v *int
		var ok bool
		switch o.do {
		case "get":
			v, ok = c.Get(o.h, is(o.key))
		case "peek":
			v, ok = c.Peek(o.h, is(o.key))
		}
		got := 0
		if ok {
			got = *v
		}
		if got != o.want {
			t.Fatalf("op %d: %s(%q, %d) = %d, want %d (0: missing)", i, o.do, o.key, o.h, got, o.want)
		}
		if !ok && o.do == "get" {
			v, recycled := c.Add(o.h, o.key)
			if recycled != o.recyc {
				t.Fatalf("op %d: Add(%q, %d) recycled = %v, want %v", i, o.key, o.h, recycled, o.recyc)
			}
			*v = o.val
		}
	}
}

func TestCache(t *testing.T) {
	tests := []struct {
		name        string
		size        int
		ops         []op
		wantLen     int
		wantEvicted uint64
	}{
		{
			name: "the least recently used goes",
			size: 2,
			ops: []op{
				{do: "get", key: "a", h: 1, val: 1},
				{do: "get", key: "b", h: 2, val: 2},
				{do: "get", key: "a", h: 1, want: 1}, // a is now the most recent
				{do: "get", key: "c", h: 3, val: 3, recyc: true},
				{do: "peek", key: "b", h: 2},
				{do: "peek", key: "a", h: 1, want: 1},
				{do: "peek", key: "c", h: 3, want: 3},
			},
			wantLen: 2, wantEvicted: 1,
		},
		{
			name: "peek does not mark used",
			size: 2,
			ops: []op{
				{do: "get", key: "a", h: 1, val: 1},
				{do: "get", key: "b", h: 2, val: 2},
				{do: "peek", key: "a", h: 1, want: 1},
				{do: "get", key: "c", h: 3, val: 3, recyc: true}, // a goes all the same
				{do: "peek", key: "a", h: 1},
				{do: "peek", key: "b", h: 2, want: 2},
			},
			wantLen: 2, wantEvicted: 1,
		},
		{
			name: "a key is found only under its hash",
			size: 4,
			ops: []op{
				{do: "get", key: "a", h: 1, val: 1},
				{do: "peek", key: "a", h: 2},
				{do: "peek", key: "b", h: 1},
			},
			wantLen: 1,
		},
		{
			name: "keys sharing a hash keep their own values",
			size: 4,
			ops: []op{
				{do: "get", key: "a", h: 7, val: 1},
				{do: "get", key: "b", h: 7, val: 2},
				{do: "get", key: "c", h: 7, val: 3},
				{do: "peek", key: "a", h: 7, want: 1},
				{do: "peek", key: "b", h: 7, want: 2},
				{do: "peek", key: "c", h: 7, want: 3},
				{do: "peek", key: "d", h: 7},
			},
			wantLen: 3,
		},
		{
			name: "keys sharing a hash are forgotten together, and come back new",
			size: 3,
			ops: []op{
				{do: "get", key: "a", h: 7, val: 1},
				{do: "get", key: "b", h: 7, val: 2},
				{do: "get", key: "x", h: 8, val: 3},
				{do: "get", key: "y", h: 9, val: 4, recyc: true}, // full: a and b go, the oldest entry
				{do: "peek", key: "a", h: 7},
				{do: "peek", key: "b", h: 7},
				{do: "get", key: "b", h: 7, val: 5, recyc: true},
				{do: "peek", key: "b", h: 7, want: 5},
				{do: "peek", key: "x", h: 8, want: 3},
			},
			wantLen: 3, wantEvicted: 2,
		},
		{
			name: "all keys share a hash: still at most size",
			size: 2,
			ops: []op{
				{do: "get", key: "a", h: 0, val: 1},
				{do: "get", key: "b", h: 0, val: 2},
				{do: "get", key: "c", h: 0, val: 3, recyc: true}, // the one entry goes whole
				{do: "peek", key: "a", h: 0},
				{do: "peek", key: "b", h: 0},
				{do: "peek", key: "c", h: 0, want: 3},
			},
			wantLen: 1, wantEvicted: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New[string, int](tc.size)
			run(t, c, tc.ops)
			if c.Len() != tc.wantLen || c.Evicted() != tc.wantEvicted {
				t.Errorf("Len(), Evicted() = %d, %d; want %d, %d", c.Len(), c.Evicted(), tc.wantLen, tc.wantEvicted)
			}
		})
	}
}

// TestAddReusesForgottenValue: the value of a reused node still holds the
// forgotten key's value, so that its buffers can be reused.
func TestAddReusesForgottenValue(t *testing.T) {
	c := New[int, []byte](1)
	v, recycled := c.Add(1, 1)
	if recycled || *v != nil {
		t.Fatalf("first Add = %v, recycled %v; want a zero value, not recycled", *v, recycled)
	}
	*v = make([]byte, 0, 64)
	v, recycled = c.Add(2, 2)
	if !recycled || cap(*v) != 64 {
		t.Fatalf("Add beyond size: recycled %v, cap %d; want the forgotten value's buffer (cap 64)", recycled, cap(*v))
	}
}

func TestNewPanicsOnSize(t *testing.T) {
	tests := []struct {
		name string
		new  func()
		want string
	}{
		{"New(0)", func() { New[int, int](0) }, "hashlru: size must be positive"},
		{"New(-1)", func() { New[int, int](-1) }, "hashlru: size must be positive"},
	}
	for _, tc := range tests {
		got := func() (p any) {
			defer func() { p = recover() }()
			tc.new()
			return nil
		}()
		if got != tc.want {
			t.Errorf("%s panicked with %v, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzCache runs a script of calls on a Cache of 4 keys, with hashes
// that collide often (one of 3 for 8 keys), against a plain model of an
// LRU whose entries are the hashes. Each byte picks a key (low 3 bits) and
// a call (top 2 bits): Get then Add if missing, GetOrAdd, Peek, or Peek
// then Touch if found. Whatever the script: a key is found with its own
// value or not at all, never more than 4 keys are held, and the cache
// holds exactly the keys the model does.
func FuzzCache(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 0, 1})
	f.Add([]byte{0, 3, 6, 0x80, 0x83, 1, 4, 7, 0x81})
	f.Add([]byte{0, 0x80, 1, 2, 3, 4, 0x80})
	f.Add([]byte{0x40, 0x43, 0x46, 0xc0, 0x41, 0x44, 0x47, 0xc3, 0x42})
	f.Fuzz(func(t *testing.T, script []byte) {
		const size = 4
		hashOf := func(k int) uint64 { return uint64(k % 3) }
		c := New[int, int](size)
		m := &model{size: size, vals: map[int]int{}}
		for i, b := range script {
			k, call := int(b&7), b>>6
			h := hashOf(k)
			var v *int
			var ok bool
			switch call {
			case 0:
				v, ok = c.Get(h, is(k))
			case 1:
				v, ok, _ = c.GetOrAdd(h, is(k), func() int { return k })
			default:
				v, ok = c.Peek(h, is(k))
			}
			want, wantOK := m.get(k, hashOf, call < 2)
			if ok != wantOK || ok && *v != want {
				t.Fatalf("op %d: call %d on key %d found %v, want %v (value %d)", i, call, k, ok, wantOK, want)
			}
			switch {
			case !ok && call == 0:
				v, _ = c.Add(h, k)
				fallthrough
			case !ok && call == 1:
				*v = i + 1
				m.add(k, hashOf, i+1)
			case ok && call == 3:
				c.Touch(h)
				m.touch(h)
			}
			if c.Len() != len(m.vals) || c.Len() > size || c.Evicted() != m.evicted {
				t.Fatalf("op %d: Len() = %d, Evicted() = %d; model %d, %d", i, c.Len(), c.Evicted(), len(m.vals), m.evicted)
			}
		}
	})
}

// model is an LRU of hashes, each holding the keys with that hash, as
// plain as it gets.
type model struct {
	size    int
	order   []uint64 // least recently used first
	vals    map[int]int
	evicted uint64
}

func (m *model) get(k int, hashOf func(int) uint64, touch bool) (int, bool) {
	v, ok := m.vals[k]
	if touch && slices.Contains(m.order, hashOf(k)) {
		m.touch(hashOf(k))
	}
	return v, ok
}

func (m *model) add(k int, hashOf func(int) uint64, v int) {
	for len(m.vals) >= m.size {
		oldest := m.order[0]
		m.order = m.order[1:]
		for key := range m.vals {
			if hashOf(key) == oldest {
				delete(m.vals, key)
				m.evicted++
			}
		}
	}
	m.vals[k] = v
	m.touch(hashOf(k))
}

func (m *model) touch(h uint64) {
	m.order = append(slices.DeleteFunc(m.order, func(o uint64) bool { return o == h }), h)
}

// is returns the match function of key k.
func is[K comparable](k K) func(*K) bool { return func(s *K) bool { return *s == k } }
