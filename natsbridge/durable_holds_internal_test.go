package natsbridge

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestPoolOfAReaderStoppedWhileFencedBeginsNothing: a Pool over a durable
// reader whose lease ran out (fenced, its turn given up, as after a
// pause: another reader may take the position over) and whose watcher is
// then stopped (a group member's partition moving away, a Shutdown)
// begins none of the values it held: they are voided, left
// unacknowledged for the next reader, and the watcher hands its position
// over without waiting for them.
func TestPoolOfAReaderStoppedWhileFencedBeginsNothing(t *testing.T) {
	h := heldEvens(t)
	ctx, a, pool, free := h.ctx, h.a, h.pool, h.free

	k := a.d.keep
	k.mu.Lock()
	k.fenceLocked("test: as after a pause past the lease")
	k.turnGivenUpLocked()
	k.mu.Unlock()
	a.Stop() // before it could resume: it stops fenced, as a group member's partition moving away
	free()   // value 0's handler returns; the evens behind it must not begin
	select {
	case <-a.d.finished: // handed over: nothing left to wait for
	case <-ctx.Done():
		t.Fatal("the watcher stopped while fenced did not hand its position over")
	}
	if err := pool.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if evens := slices.DeleteFunc(h.begun(), func(v int) bool { return v%2 == 1 || v == 0 }); len(evens) > 0 {
		t.Errorf("the Pool of the reader stopped while fenced began %v", evens)
	}
	if s := pool.Stats(); s.Voided != 9 || s.Abandoned != 9 {
		t.Errorf("Stats %+v: want the 9 held values voided (and abandoned)", s)
	}
}

// poll waits, in bounded steps, until cond holds, or fails after 30s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) { // a bounded poll of the Pool's state
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestPoolOfAReaderThatTakesItsPositionBackVoidsItsTurnBefore: a Pool
// over a durable reader fenced by a record another reader wrote (its
// position taken over), which then takes the position back (the only
// reader left), begins none of the values it held from its turn before:
// they are voided, come again after the position's floor, and are
// handled then, each key in order; none is lost.
func TestPoolOfAReaderThatTakesItsPositionBackVoidsItsTurnBefore(t *testing.T) {
	h := heldEvens(t)
	ctx, a, pool, free := h.ctx, h.a, h.pool, h.free
	// Another reader writes itself in as the owner, its lease over: the
	// reader is fenced at its next write, gives its turn up, and, the only
	// reader, takes the position back.
	k := a.d.keep
	me := func() string {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.me // a new name at each takeover
	}
	before := me()
	rec, rev, err := k.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec.Owner, rec.Until = "another", time.Now().UnixNano()
	b, _ := json.Marshal(rec)
	if _, err := k.kv.Update(ctx, k.key, b, rev); err != nil {
		t.Fatal(err)
	}
	poll(t, "the position taken back", func() bool { return me() != before })
	cut := len(h.begun()) // the turn before's begins; none since: value 0 is stuck, the evens wait
	free()                // value 0's handler returns; the evens behind it are of the turn before
	if err := pool.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "every value begun in the new turn", func() bool { // each comes again: none was acknowledged
		got := map[int]bool{}
		for _, v := range h.begun()[cut:] {
			got[v] = true
		}
		return len(got) == 20
	})
	began := h.begun()
	seen := map[int]bool{}
	for _, turn := range [][]int{began[:cut], began[cut:]} {
		last := map[int]int{0: -1, 1: -1}
		for _, v := range turn {
			seen[v] = true
			if v <= last[v%2] {
				t.Errorf("key %d: %d began after %d in one turn (began %v, the turn before's first %d)", v%2, v, last[v%2], began, cut)
			}
			last[v%2] = v
		}
	}
	for v := range 20 {
		if !seen[v] {
			t.Errorf("value %d never handled", v)
		}
	}
	if s := pool.Stats(); s.Voided == 0 {
		t.Errorf("Stats %+v: want the held values of the turn before voided", s)
	}
}

// evensHeld is a Pool over a durable reader of 20 values (0..19) keyed by
// parity, with 2 workers: the odd values handled, value 0's first attempt
// in its handler until free, the even values waiting behind it.
type evensHeld struct {
	ctx  context.Context
	a    *Watcher[int]
	pool *handle.Pool[int, int]
	free func() // lets value 0's first handler return

	mu    sync.Mutex // guards began
	began []int      // the values begun, in order
}

// heldEvens returns an evensHeld, once the odd values are handled; the
// test's end frees value 0 and shuts the Pool down.
func heldEvens(t *testing.T) *evensHeld {
	t.Helper()
	ctx, topic := ordersTopic(t)
	p := publisher(t, topic, PublisherOptions{})
	for i := range 20 {
		if err := p.Publish(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := topic.Watch(ctx, WatchOptions{Durable: "d", From: 1, Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := &evensHeld{ctx: ctx, a: a}
	release := make(chan struct{})
	var once sync.Once
	h.free = func() { once.Do(func() { close(release) }) }
	first := true
	h.pool = handle.New(a, func(v int) int { return v % 2 }, func(_ context.Context, v int) error {
		h.mu.Lock()
		h.began = append(h.began, v)
		stuck := v == 0 && first
		first = first && v != 0
		h.mu.Unlock()
		if stuck {
			<-release // the even values wait behind it
		}
		return nil
	}, handle.Options{Workers: 2})
	t.Cleanup(func() {
		h.free() // before the Pool's Shutdown, which waits for value 0's handler
		_ = h.pool.Shutdown(ctx)
	})
	poll(t, "the odd values handled, the even ones held", func() bool {
		s := h.pool.Stats()
		return s.Handled == 10 && s.Waiting == 9
	})
	return h
}

// begun returns the values begun so far, in order.
func (h *evensHeld) begun() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.began)
}
