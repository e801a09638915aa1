package broadcast_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// policyModel is what a DropNewest or DropOldest watcher holds, value by
// value: the unread prefix first (never dropped), then at most limit
// published values. A full DropOldest queue watcher discards its oldest
// published value; a full DropOldest channel watcher does too, unless a
// prefix value is still unread in front, when it skips the new one
// (WatchWith).
type policyModel struct {
	limit          int
	policy         broadcast.FullPolicy
	channel        bool
	prefix         []int // unread prefix values
	queue          []int // unread published values
	delivered      uint64
	newest, oldest uint64
}

func (m *policyModel) place(v int) {
	if len(m.queue) < m.limit {
		m.queue = append(m.queue, v)
		m.delivered++
		return
	}
	if m.policy == broadcast.DropNewest || (m.channel && len(m.prefix) > 0) {
		m.newest++
		return
	}
	m.queue = append(m.queue[1:], v)
	m.delivered++
	m.oldest++
}

func (m *policyModel) read(k int) []int {
	var got []int
	for ; k > 0 && len(m.prefix) > 0; k-- {
		got, m.prefix = append(got, m.prefix[0]), m.prefix[1:]
	}
	k = min(k, len(m.queue))
	got = append(got, m.queue[:k]...)
	m.queue = m.queue[k:]
	return got
}

// TestPolicyModel drives one DropNewest or DropOldest watcher,
// with a prefix, read as a queue watcher or a channel watcher, from one
// goroutine: bursts of values (each ended by Flush, so every value is
// placed) alternate with reads of a few values by Next, All loops that
// break, and receives from Events. What each read returns, and Delivered
// and Dropped, must match the model after every step.
func TestPolicyModel(t *testing.T) {
	for seed := range uint64(120) {
		policy := broadcast.DropNewest + broadcast.FullPolicy(seed%2)
		channel := seed%4 >= 2
		t.Run(fmt.Sprintf("%v/channel=%v/%d", policy, channel, seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2727))
			b := newB[int](t, broadcast.Options{})
			m := &policyModel{limit: 1 + rng.IntN(4), policy: policy, channel: channel}
			for i := range rng.IntN(4) {
				m.prefix = append(m.prefix, -1-i)
			}
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: m.limit, Full: policy, Read: readMode(channel)}, m.prefix...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			next := 0
			for step := range 40 {
				if rng.IntN(2) == 0 {
					for range rng.IntN(2*m.limit + 2) {
						publish(t, b, next)
						m.place(next)
						next++
					}
					flush(t, b)
				}
				k := rng.IntN(m.limit + 2)
				want := m.read(k)
				var got []int
				for len(got) < len(want) {
					switch rng.IntN(3) {
					case 0:
						ended, cancel := context.WithCancel(context.Background())
						cancel() // everything is placed: a queued value wins
						v, err := w.Next(ended)
						if err != nil {
							t.Fatalf("step %d: Next() = %v with %v owed", step, err, want[len(got):])
						}
						got = append(got, v)
					case 1:
						n := 1 + rng.IntN(len(want)-len(got))
						for v := range w.All() {
							got = append(got, v)
							if n--; n == 0 {
								break
							}
						}
					default:
						if channel {
							got = append(got, <-w.Events())
						}
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: read %v, model %v (model holds %v %v)", step, got, want, m.prefix, m.queue)
				}
				if w.Delivered() != m.delivered || w.Dropped() != m.newest+m.oldest {
					t.Fatalf("step %d: Delivered %d Dropped %d, model %d, %d newest + %d oldest",
						step, w.Delivered(), w.Dropped(), m.delivered, m.newest, m.oldest)
				}
			}
			s := b.Stats()
			if s.DroppedNewest != m.newest || s.DroppedOldest != m.oldest {
				t.Errorf("Stats %+v, model %d newest, %d oldest", s, m.newest, m.oldest)
			}
			w.Stop()
			var rest []int
			for v := range w.All() {
				rest = append(rest, v)
			}
			if want := m.read(1 << 20); !slices.Equal(rest, want) {
				t.Errorf("after Stop read %v, model %v", rest, want)
			}
		})
	}
}
