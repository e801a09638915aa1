package queue_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/heraldgo/herald/internal/queue"
)

// model is the reference a Queue must behave like: slices, one value at
// a time.
type model struct {
	limit          int
	full           queue.Policy
	pinned, values []int
	added          uint64
}

func (m *model) putAll(vals []int) (added, dropped int, room bool) {
	for i, v := range vals {
		switch {
		case len(m.values) < m.limit:
		case m.full == queue.Block:
			return added, dropped, i < len(vals)
		case m.full == queue.DropNewest:
			dropped++
			continue
		default: // DropOldest: shed down to the limit, then add
			for len(m.values) >= m.limit {
				m.values = m.values[1:]
				dropped++
			}
		}
		m.values = append(m.values, v)
		added++
		m.added++
	}
	return added, dropped, false
}

// take removes the k values in front.
func (m *model) take(k int) []int {
	all := append(slices.Clone(m.pinned), m.values...)
	p := min(k, len(m.pinned))
	m.pinned = m.pinned[p:]
	m.values = m.values[k-p:]
	return all[:k]
}

// putBack puts vals in front, the first p of them pinned.
func (m *model) putBack(vals []int, p int) {
	m.pinned = append(slices.Clone(vals[:p]), m.pinned...)
	m.values = append(slices.Clone(vals[p:]), m.values...)
}

func (m *model) len() int { return len(m.pinned) + len(m.values) }

// FuzzQueueModel drives a Queue and the model with the same operations,
// from one goroutine, and compares every result.
func FuzzQueueModel(f *testing.F) {
	f.Add(uint8(3), []byte{0, 5, 2, 2, 0, 4, 1, 0, 2, 9, 3, 0, 4, 1})
	f.Add(uint8(1), []byte{0, 3, 2, 0, 0, 1, 0, 1, 1, 0, 2, 1})
	f.Add(uint8(7), []byte{0, 30, 2, 3, 0, 20, 2, 1, 0, 8, 4, 4})
	f.Add(uint8(2), []byte{0, 6, 5, 1, 5, 3, 0, 2, 5, 0, 5, 2, 0, 9, 5, 7})
	f.Fuzz(modelCase)
}

func modelCase(t *testing.T, params uint8, ops []byte) {
	limit := int(params)%9 + 1
	m := &model{limit: limit, full: queue.Policy(params/9%3) + queue.Block}
	m.pinned = seq(int(params) % 3)
	for i := range m.pinned {
		m.pinned[i] -= 10
	}
	q := queue.New(limit, m.full, m.pinned)
	done := make(chan struct{})
	close(done) // no take below waits
	next := 0
	var b queue.Batch[int]
	for i := 0; i+1 < len(ops); i += 2 {
		arg := int(ops[i+1])
		switch ops[i] % 6 {
		case 0, 4: // put
			n := arg % (2*limit + 2)
			if ops[i]%6 == 4 {
				n = 1
			}
			vals := make([]int, n)
			for j := range vals {
				vals[j] = next
				next++
			}
			a1, d1, room := q.PutAll(vals)
			a2, d2, room2 := m.putAll(vals)
			if a1 != a2 || d1 != d2 || (room != nil) != room2 {
				t.Fatalf("PutAll(%v) = %d, %d, room %v; model %d, %d, %v", vals, a1, d1, room != nil, a2, d2, room2)
			}
		case 1: // take one
			v, err := q.Take(done)
			if m.len() == 0 {
				if !errors.Is(err, queue.ErrDone) {
					t.Fatalf("Take() on an empty queue = %d, %v; want ErrDone", v, err)
				}
				break
			}
			if want := m.take(1)[0]; v != want || err != nil {
				t.Fatalf("Take() = %d, %v; model %d", v, err, want)
			}
		case 2: // take a batch, hand out some, hand back the rest
			err := q.TakeBatch(&b, done)
			if m.len() == 0 {
				if !errors.Is(err, queue.ErrDone) || b.Len() != 0 {
					t.Fatalf("TakeBatch() on an empty queue = %v, %d values", err, b.Len())
				}
				break
			}
			p := len(m.pinned)
			want := m.take(m.len())
			k := arg % (len(want) + 1)
			var got []int
			for range k {
				v, _ := b.Next()
				got = append(got, v)
			}
			if !slices.Equal(got, want[:k]) || b.Len() != len(want)-k {
				t.Fatalf("batch handed out %v with %d left; model %v", got, b.Len(), want)
			}
			q.PutBack(&b)
			m.putBack(want[k:], max(p-k, 0))
		case 3: // drain
			if arg%4 == 0 {
				got, want := q.Drain(nil), m.take(m.len())
				if !slices.Equal(got, want) {
					t.Fatalf("Drain() = %v, model %v", got, want)
				}
			}
		case 5: // take up to a few
			k := arg%4 + 1
			got, err := q.TakeUpTo(nil, k, done)
			if m.len() == 0 {
				if !errors.Is(err, queue.ErrDone) || len(got) != 0 {
					t.Fatalf("TakeUpTo(%d) on an empty queue = %v, %v; want ErrDone", k, got, err)
				}
				break
			}
			if want := m.take(min(k, m.len())); !slices.Equal(got, want) || err != nil {
				t.Fatalf("TakeUpTo(%d) = %v, %v; model %v", k, got, err, want)
			}
		}
		if added, queued := q.Counts(); added != m.added || queued != m.len() || q.Len() != m.len() {
			t.Fatalf("Counts() = %d, %d, Len() %d; model %d, %d", added, queued, q.Len(), m.added, m.len())
		}
	}
	if got, want := q.Drain(nil), m.take(m.len()); !slices.Equal(got, want) {
		t.Fatalf("queue holds %v, model %v", got, want)
	}
}

// TestQueueModelRandom runs the model over many random inputs.
func TestQueueModelRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		params, ops := byte(rng.Uint32()), make([]byte, 2*rng.IntN(40))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		if !t.Run("", func(t *testing.T) { modelCase(t, params, ops) }) {
			t.Fatalf("params %d ops %v", params, ops)
		}
	}
}
