package queue_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/internal/queue"
)

// failsafe bounds a wait that should end at once: never the means of
// synchronisation, only the limit after which a test reports a hang.
const failsafe = 10 * time.Second

// filled returns a queue of limit and policy p holding vals (at most
// limit of them).
func filled(limit int, p queue.Policy, vals ...int) *queue.Queue[int] {
	q := queue.New[int](limit, p, nil)
	q.PutAll(vals)
	return q
}

// contents drains q and returns what it held.
func contents(q *queue.Queue[int]) []int { return q.Drain(nil) }

func TestPutAllByPolicy(t *testing.T) {
	tests := []struct {
		name          string
		policy        queue.Policy
		queued        []int // in a queue of limit 3
		put           []int
		added, droppd int
		room          bool
		want          []int
	}{
		{"Block, room for all", queue.Block, []int{1}, []int{2, 3}, 2, 0, false, []int{1, 2, 3}},
		{"Block, fills", queue.Block, []int{1}, []int{2, 3, 4, 5}, 2, 0, true, []int{1, 2, 3}},
		{"Block, full", queue.Block, []int{1, 2, 3}, []int{4}, 0, 0, true, []int{1, 2, 3}},
		{"DropNewest, room for all", queue.DropNewest, nil, []int{1, 2}, 2, 0, false, []int{1, 2}},
		{"DropNewest, fills", queue.DropNewest, []int{1, 2}, []int{3, 4, 5}, 1, 2, false, []int{1, 2, 3}},
		{"DropNewest, full", queue.DropNewest, []int{1, 2, 3}, []int{4}, 0, 1, false, []int{1, 2, 3}},
		{"DropOldest, room for all", queue.DropOldest, []int{1}, []int{2}, 1, 0, false, []int{1, 2}},
		{"DropOldest, fills", queue.DropOldest, []int{1, 2}, []int{3, 4}, 2, 1, false, []int{2, 3, 4}},
		{"DropOldest, longer than the limit", queue.DropOldest, []int{1, 2}, []int{3, 4, 5, 6}, 4, 3, false, []int{4, 5, 6}},
		{"nothing put", queue.Block, []int{1, 2, 3}, nil, 0, 0, false, []int{1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := filled(3, tc.policy, tc.queued...)
			added, dropped, room := q.PutAll(tc.put)
			if added != tc.added || dropped != tc.droppd || (room != nil) != tc.room {
				t.Errorf("PutAll(%v) = %d, %d, room %v; want %d, %d, room %v", tc.put, added, dropped, room != nil, tc.added, tc.droppd, tc.room)
			}
			if got, _ := q.Counts(); got != uint64(len(tc.queued)+tc.added) {
				t.Errorf("Counts() added = %d, want %d", got, len(tc.queued)+tc.added)
			}
			if diff := cmp.Diff(tc.want, contents(q)); diff != "" {
				t.Errorf("queue after PutAll (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPutOneValue(t *testing.T) {
	tests := []struct {
		policy        queue.Policy
		added, droppd int
		room          bool
		want          []int
	}{
		{queue.Block, 0, 0, true, []int{1, 2}},
		{queue.DropNewest, 0, 1, false, []int{1, 2}},
		{queue.DropOldest, 1, 1, false, []int{2, 3}},
	}
	for _, tc := range tests {
		q := filled(2, tc.policy, 1, 2)
		added, dropped, room := q.Put(3)
		if added != tc.added || dropped != tc.droppd || (room != nil) != tc.room {
			t.Errorf("policy %d: Put(3) on a full queue = %d, %d, room %v; want %d, %d, room %v", tc.policy, added, dropped, room != nil, tc.added, tc.droppd, tc.room)
		}
		if got := contents(q); !slices.Equal(got, tc.want) {
			t.Errorf("policy %d: queue holds %v, want %v", tc.policy, got, tc.want)
		}
	}
}

// TestPinnedValuesTakeNoRoom: pinned values are read first, take no room
// and no policy drops them.
func TestPinnedValuesTakeNoRoom(t *testing.T) {
	for _, p := range []queue.Policy{queue.Block, queue.DropNewest, queue.DropOldest} {
		pinned := []int{-2, -1}
		q := queue.New(2, p, pinned)
		pinned[0] = 99 // New copied them
		added, dropped, _ := q.PutAll([]int{1, 2, 3})
		want, wantAdded, wantDropped := []int{-2, -1, 1, 2}, 2, 1
		switch p {
		case queue.Block:
			wantDropped = 0
		case queue.DropOldest:
			want, wantAdded = []int{-2, -1, 2, 3}, 3
		}
		if added != wantAdded || dropped != wantDropped || q.Len() != 4 || q.Limit() != 2 {
			t.Errorf("policy %d: PutAll(1 2 3) = %d, %d; Len %d, Limit %d; want %d, %d; 4, 2",
				p, added, dropped, q.Len(), q.Limit(), wantAdded, wantDropped)
		}
		if got := contents(q); !slices.Equal(got, want) {
			t.Errorf("policy %d: queue holds %v, want %v", p, got, want)
		}
	}
}

// takeBatch takes a batch from q, without waiting, and hands out k values.
func takeBatch(t *testing.T, q *queue.Queue[int], b *queue.Batch[int], k int) []int {
	t.Helper()
	if err := q.TakeBatch(b, nil); err != nil {
		t.Fatalf("TakeBatch() = %v", err)
	}
	var got []int
	for range k {
		v, ok := b.Next()
		if !ok {
			t.Fatalf("batch ended after %v", got)
		}
		got = append(got, v)
	}
	return got
}

// TestPutBackGoesToTheFront: what a batch did not hand out goes back to
// the front in order, pinned values still pinned; the rest take room, so
// a full queue holds more than its limit until a reader takes the excess,
// or DropOldest's next put discards it.
func TestPutBackGoesToTheFront(t *testing.T) {
	tests := []struct {
		policy         queue.Policy
		added, dropped int  // PutAll(7) after the PutBack
		room           bool // a Block writer waits
		want           []int
	}{
		{queue.Block, 0, 0, true, []int{-1, 1, 2, 3, 4, 5, 6}},
		{queue.DropNewest, 0, 1, false, []int{-1, 1, 2, 3, 4, 5, 6}},
		{queue.DropOldest, 1, 4, false, []int{-1, 5, 6, 7}},
	}
	for _, tc := range tests {
		q := queue.New(3, tc.policy, []int{-2, -1})
		q.PutAll([]int{1, 2, 3})
		var b queue.Batch[int]
		if got := takeBatch(t, q, &b, 1); !slices.Equal(got, []int{-2}) {
			t.Fatalf("batch handed out %v, want -2", got)
		}
		q.PutAll([]int{4, 5, 6}) // the batch took everything: all fit
		q.PutBack(&b)            // -1 pinned again, 1 2 3 ahead of 4 5 6
		if b.Len() != 0 {
			t.Errorf("batch holds %d after PutBack", b.Len())
		}
		added, dropped, room := q.PutAll([]int{7})
		if added != tc.added || dropped != tc.dropped || (room != nil) != tc.room {
			t.Errorf("policy %d: PutAll(7) over the limit = %d, %d, room %v; want %d, %d, room %v",
				tc.policy, added, dropped, room != nil, tc.added, tc.dropped, tc.room)
		}
		if got := contents(q); !slices.Equal(got, tc.want) {
			t.Errorf("policy %d: queue holds %v, want %v", tc.policy, got, tc.want)
		}
	}
}

// TestTakeUpToHandsOnWhatItLeaves: of two readers waiting in TakeUpTo,
// the one woken takes its share and wakes the other for the value it
// left.
func TestTakeUpToHandsOnWhatItLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[int](4, queue.Block, nil)
		got := make(chan []int, 2)
		for range 2 {
			go func() {
				v, err := q.TakeUpTo(nil, 1, nil)
				if err != nil {
					t.Errorf("TakeUpTo() = %v", err)
				}
				got <- v
			}()
		}
		synctest.Wait() // both readers wait
		q.PutAll([]int{1, 2})
		a, b := <-got, <-got
		if len(a) != 1 || len(b) != 1 || a[0]+b[0] != 3 {
			t.Errorf("the two readers got %v and %v, want [1] and [2]", a, b)
		}
	})
}

// TestTakeWaitsThenEnds: Take and TakeBatch wait for a value; a closed
// done ends the wait with ErrDone, but a queued value wins over it; after
// Close, readers take what is queued, then get ErrClosed.
func TestTakeWaitsThenEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[int](4, queue.Block, nil)
		got := make(chan int, 2)
		go func() {
			v, err := q.Take(nil)
			if err != nil {
				t.Errorf("Take() = %v", err)
			}
			got <- v
		}()
		go func() {
			var b queue.Batch[int]
			if err := q.TakeBatch(&b, nil); err != nil {
				t.Errorf("TakeBatch() = %v", err)
			}
			for v, ok := b.Next(); ok; v, ok = b.Next() {
				got <- v
			}
		}()
		synctest.Wait() // both readers wait
		q.Put(1)
		synctest.Wait()
		q.Put(2)
		if a, b := <-got, <-got; a+b != 3 {
			t.Errorf("the two readers got %d and %d, want 1 and 2", a, b)
		}

		done := make(chan struct{})
		close(done)
		if _, err := q.Take(done); !errors.Is(err, queue.ErrDone) {
			t.Errorf("Take(closed done) on an empty queue = %v, want ErrDone", err)
		}
		var b queue.Batch[int]
		if err := q.TakeBatch(&b, done); !errors.Is(err, queue.ErrDone) {
			t.Errorf("TakeBatch(closed done) on an empty queue = %v, want ErrDone", err)
		}
		q.PutAll([]int{3, 4, 5})
		if v, err := q.Take(done); v != 3 || err != nil {
			t.Errorf("Take(closed done) with a value queued = %d, %v; want 3, nil", v, err)
		}

		ended := make(chan error, 1)
		q2 := queue.New[int](4, queue.Block, nil)
		go func() { _, err := q2.Take(nil); ended <- err }()
		synctest.Wait()
		q2.Close()
		if err := <-ended; !errors.Is(err, queue.ErrClosed) {
			t.Errorf("waiting Take() after Close = %v, want ErrClosed", err)
		}
		q.Close()
		q.Close() // idempotent
		if err := q.TakeBatch(&b, nil); err != nil || b.Len() != 2 {
			t.Errorf("TakeBatch() after Close = %v with %d values, want the 2 queued", err, b.Len())
		}
		b.Next()
		b.Next()
		if err := q.TakeBatch(&b, nil); !errors.Is(err, queue.ErrClosed) || b.Len() != 0 {
			t.Errorf("TakeBatch() on a closed, empty queue = %v with %d values, want ErrClosed", err, b.Len())
		}
		if added, dropped, room := q.PutAll([]int{6}); added != 0 || dropped != 0 || room != nil {
			t.Errorf("PutAll after Close = %d, %d, room %v; want nothing", added, dropped, room != nil)
		}
	})
}

// TestRoomSignalled: a Block writer that found the queue full is signalled
// once a reader takes a value, or Drain empties the queue, and then puts
// the rest.
func TestRoomSignalled(t *testing.T) {
	tests := []struct {
		name string
		make func(q *queue.Queue[int])
	}{
		{"Take", func(q *queue.Queue[int]) { q.Take(nil) }},
		{"TakeBatch", func(q *queue.Queue[int]) { var b queue.Batch[int]; q.TakeBatch(&b, nil) }},
		{"Drain", func(q *queue.Queue[int]) { q.Drain(nil) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := queue.New[int](2, queue.Block, nil)
			added, _, room := q.PutAll([]int{1, 2, 3})
			if added != 2 || room == nil {
				t.Fatalf("PutAll(1 2 3) on a queue of 2 = %d, room %v", added, room)
			}
			select {
			case <-room:
				t.Fatal("room signalled before any reader took a value")
			default:
			}
			tc.make(q)
			select {
			case <-room:
			case <-time.After(failsafe):
				t.Fatalf("room not signalled after %s", tc.name)
			}
			if added, _, room := q.PutAll([]int{3}); added != 1 || room != nil {
				t.Errorf("PutAll(3) once signalled = %d, room %v; want 1, nil", added, room)
			}
		})
	}
}

// TestAllYieldsInOrderAndHandsBack: All yields every value in order and
// ends once the queue is closed and empty; a loop that breaks hands the
// values it took and did not yield back to the front.
func TestAllYieldsInOrderAndHandsBack(t *testing.T) {
	q := queue.New[int](8, queue.Block, []int{-1})
	q.PutAll([]int{0, 1, 2, 3})
	var got []int
	for v := range q.All {
		got = append(got, v)
		if v == 1 {
			break // 2 3 go back
		}
	}
	q.PutAll([]int{4})
	q.Close()
	for v := range q.All {
		got = append(got, v)
	}
	if want := []int{-1, 0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("All read %v, want %v", got, want)
	}
}

// TestCloseWakesWriter: a Block writer waiting for room is woken by
// Close, and its next put adds nothing; the readers still take what was
// queued.
func TestCloseWakesWriter(t *testing.T) {
	q := queue.New[int](1, queue.Block, nil)
	_, _, room := q.PutAll([]int{1, 2})
	q.Close()
	select {
	case <-room:
	case <-time.After(failsafe):
		t.Fatal("room not signalled after Close")
	}
	if added, dropped, room := q.PutAll([]int{2}); added != 0 || dropped != 0 || room != nil {
		t.Errorf("PutAll after Close = %d, %d, room %v; want nothing", added, dropped, room != nil)
	}
	if v, err := q.Take(nil); v != 1 || err != nil {
		t.Errorf("Take() after Close = %d, %v; want 1, nil", v, err)
	}
}

// TestConcurrentReaders: one writer, putting under Block and waiting for
// room in a select, and readers mixing Take, TakeBatch and PutBack: every
// value is read exactly once, and a reader that never hands back reads in
// order.
func TestConcurrentReaders(t *testing.T) {
	const n = 20000
	q := queue.New[int](16, queue.Block, []int{-2, -1})
	stop := make(chan struct{})
	defer close(stop)
	results := make([][]int, 4)
	var wg sync.WaitGroup
	for r := range results {
		wg.Go(func() {
			var b queue.Batch[int]
			for i := 0; ; i++ {
				switch {
				case r == 0 || i%3 == 0:
					v, err := q.Take(nil)
					if err != nil {
						return
					}
					results[r] = append(results[r], v)
				case r == 1 || i%3 == 1:
					var err error
					if results[r], err = q.TakeUpTo(results[r], 1+i%5, nil); err != nil {
						return
					}
				default:
					if q.TakeBatch(&b, nil) != nil {
						return
					}
					for k := 0; k < 1+i%4; k++ {
						v, ok := b.Next()
						if !ok {
							break
						}
						results[r] = append(results[r], v)
					}
					q.PutBack(&b)
				}
			}
		})
	}
	vals := make([]int, 0, 64)
	for i := 0; i < n; i += len(vals) {
		vals = vals[:0]
		for j := i; j < min(i+1+i%64, n); j++ {
			vals = append(vals, j)
		}
		for rest := vals; len(rest) > 0; {
			added, _, room := q.PutAll(rest)
			rest = rest[added:]
			if room != nil {
				select {
				case <-room:
				case <-stop:
					return
				}
			}
		}
	}
	q.Close()
	wg.Wait()
	seen := make(map[int]int)
	for _, got := range results {
		for _, v := range got {
			seen[v]++
		}
	}
	for v := -2; v < n; v++ {
		if seen[v] != 1 {
			t.Fatalf("value %d read %d times", v, seen[v])
		}
	}
	if len(seen) != n+2 {
		t.Errorf("read %d distinct values, want %d", len(seen), n+2)
	}
}

// TestSingleReaderKeepsOrder: a reader alone sees the values in order,
// whatever mix of Take, TakeBatch and PutBack it uses.
func TestSingleReaderKeepsOrder(t *testing.T) {
	q := queue.New[int](8, queue.Block, []int{-1})
	done := make(chan []int)
	go func() {
		var got []int
		var b queue.Batch[int]
		for i := 0; ; i++ {
			if i%2 == 0 {
				v, err := q.Take(nil)
				if err != nil {
					break
				}
				got = append(got, v)
				continue
			}
			if q.TakeBatch(&b, nil) != nil {
				break
			}
			if v, ok := b.Next(); ok {
				got = append(got, v)
			}
			q.PutBack(&b)
		}
		done <- got
	}()
	for i := range 5000 {
		put(q, i)
	}
	q.Close()
	if got := <-done; !slices.Equal(got, append([]int{-1}, seq(5000)...)) {
		t.Errorf("a single reader read %d values out of order", len(got))
	}
}

// put puts v in q, as a Block writer does: waiting for room while q is
// full.
func put[T any](q *queue.Queue[T], v T) {
	for {
		_, _, room := q.Put(v)
		if room == nil {
			return
		}
		<-room
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestSteadyStateAllocatesNothing: once the queue and a batch have grown,
// Put, PutAll, Take, TakeBatch and PutBack allocate nothing.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	q := queue.New[*int](64, queue.DropOldest, nil)
	v := new(int)
	vals := []*int{v, v, v, v}
	var b queue.Batch[*int]
	round := func() {
		q.Put(v)
		q.PutAll(vals)
		q.Take(nil)
		q.TakeBatch(&b, nil)
		b.Next()
		q.PutBack(&b)
		q.TakeBatch(&b, nil)
		for _, ok := b.Next(); ok; _, ok = b.Next() {
		}
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(1000, round); a != 0 {
		t.Errorf("a round of puts and takes allocates %v", a)
	}
}

func TestNewPanicsOnMisuse(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		policy queue.Policy
	}{{0, queue.Block}, {-1, queue.Block}, {1, 0}, {1, queue.DropOldest + 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d, %d) did not panic", tc.limit, tc.policy)
				}
			}()
			queue.New[int](tc.limit, tc.policy, nil)
		}()
	}
}
