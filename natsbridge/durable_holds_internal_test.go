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
	var mu sync.Mutex
	var began []int
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before the Pool's Shutdown, which waits for value 0's handler
	pool := handle.New(a, func(v int) int { return v % 2 }, func(_ context.Context, v int) error {
		mu.Lock()
		began = append(began, v)
		mu.Unlock()
		if v == 0 {
			<-release // the even values wait behind it
		}
		return nil
	}, handle.Options{Workers: 2})
	defer func() {
		free()
		_ = pool.Shutdown(ctx)
	}()
	poll(t, "the odd values handled, the even ones held", func() bool {
		s := pool.Stats()
		return s.Handled == 10 && s.Waiting == 9
	})

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
	mu.Lock()
	defer mu.Unlock()
	if evens := slices.DeleteFunc(slices.Clone(began), func(v int) bool { return v%2 == 1 || v == 0 }); len(evens) > 0 {
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
	var mu sync.Mutex
	var began []int
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	first := true
	pool := handle.New(a, func(v int) int { return v % 2 }, func(_ context.Context, v int) error {
		mu.Lock()
		began = append(began, v)
		stuck := v == 0 && first
		first = first && v != 0
		mu.Unlock()
		if stuck {
			<-release // the even values wait behind it
		}
		return nil
	}, handle.Options{Workers: 2})
	defer func() {
		free()
		_ = pool.Shutdown(ctx)
	}()
	poll(t, "the odd values handled, the even ones held", func() bool {
		s := pool.Stats()
		return s.Handled == 10 && s.Waiting == 9
	})
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
	mu.Lock()
	cut := len(began) // the turn before's begins; none since: value 0 is stuck, the evens wait
	mu.Unlock()
	free() // value 0's handler returns; the evens behind it are of the turn before
	if err := pool.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "every value begun in the new turn", func() bool { // each comes again: none was acknowledged
		mu.Lock()
		defer mu.Unlock()
		got := map[int]bool{}
		for _, v := range began[cut:] {
			got[v] = true
		}
		return len(got) == 20
	})
	mu.Lock()
	defer mu.Unlock()
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
