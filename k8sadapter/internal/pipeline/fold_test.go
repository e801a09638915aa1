package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldgo/herald/internal/testkit"
)

// byReason folds events with the same reason, at most max in one entry,
// keeping their names. Its sinks count in an int.
type byReason int

func (byReason) FoldKey(e *v1.Event) (string, bool) { return e.Reason, e.Reason != "" }

func (max byReason) Fold(w *Entry[*v1.Event, string, []string], e *v1.Event) bool {
	if len(w.Data)+1 >= int(max) {
		return false
	}
	w.Data = append(w.Data, e.Name)
	return true
}

func (byReason) ResetEntry(names *[]string) { *names = (*names)[:0] }

func (byReason) AddCounts(c *int, o int) { *c += o }

func (byReason) Classify(err error, _ *v1.Event) (Class, bool) { return ClassOf(err), false }

func (byReason) Pause(int) time.Duration { return 10 * time.Second }

func reasoned(name, reason string) *v1.Event {
	return &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Reason: reason}
}

// taken is an entry as a test sees it.
type taken struct {
	First  string
	Events int
	Folded []string
}

func take(f *Fold[*v1.Event, string, []string]) []taken {
	var out []taken
	for {
		w, _ := f.Take()
		if w == nil {
			return out
		}
		out = append(out, taken{w.First.Name, w.Events, append([]string(nil), w.Data...)})
		f.Done(w)
	}
}

// TestFoldOrderAndCapacity: repeats fold into the newest waiting entry of
// their key, up to what the rule allows; entries leave in the order of
// their first event; a full Fold refuses only what would take an entry;
// an entry taken takes no more.
func TestFoldOrderAndCapacity(t *testing.T) {
	f := newFold(3, byReason(2))
	offers := []struct {
		name, reason string
		want         Offered
	}{
		{"a1", "a", Queued},
		{"b1", "b", Queued},
		{"a2", "a", Folded},
		{"x1", "", Queued}, // no key: never folds
		{"a3", "a", Full},  // a's entry is full (2 events), and so is the Fold
		{"b2", "b", Folded},
		{"c1", "c", Full},
	}
	for _, o := range offers {
		if got := f.Offer(reasoned(o.name, o.reason)); got != o.want {
			t.Errorf("Offer(%s) = %v, want %v", o.name, got, o.want)
		}
	}
	if d, r := f.Delivered(), f.Dropped(); d != 5 || r != 2 {
		t.Errorf("Delivered, Dropped = %d, %d; want 5, 2", d, r)
	}
	w, _ := f.Take() // a1's entry leaves: a's next event takes a new one
	if got := f.Offer(reasoned("a4", "a")); got != Queued {
		t.Errorf("Offer(a4) after a's entry was taken = %v, want Queued", got)
	}
	if got := f.Offer(reasoned("a5", "a")); got != Folded {
		t.Errorf("Offer(a5) = %v, want Folded into a4", got)
	}
	f.Done(w)
	want := []taken{{"b1", 2, []string{"b2"}}, {"x1", 1, nil}, {"a4", 2, []string{"a5"}}}
	if diff := cmp.Diff(want, take(f)); diff != "" {
		t.Errorf("entries taken (-want +got):\n%s", diff)
	}
}

// TestFoldDoneReportsEveryEarlierEventDealtWith: Done's count covers the
// events before the oldest waiting entry, even when a later event folded
// into an entry taken first: Flush must not return before an earlier
// event, waiting in another entry, is dealt with.
func TestFoldDoneReportsEveryEarlierEventDealtWith(t *testing.T) {
	f := newFold(10, byReason(10))
	f.Offer(reasoned("a1", "a")) // 0
	f.Offer(reasoned("b1", "b")) // 1
	f.Offer(reasoned("a2", "a")) // 2, folded into a1's entry
	w, _ := f.Take()
	if got := f.Done(w); got != 1 {
		t.Errorf("Done(a's entry) = %d, want 1: b1 (position 1) still waits", got)
	}
	w, _ = f.Take()
	if got := f.Done(w); got != 3 {
		t.Errorf("Done(b's entry) = %d, want 3: all dealt with", got)
	}
}

// TestFoldClose: a closed Fold refuses without counting (nobody is owed
// the event), hands out what waits, then reports closed.
func TestFoldClose(t *testing.T) {
	f := newFold(10, byReason(10))
	f.Offer(reasoned("a1", "a"))
	f.Close()
	f.Close() // idempotent
	if got := f.Offer(reasoned("a2", "a")); got != Closed || f.Delivered() != 1 || f.Dropped() != 0 {
		t.Errorf("Offer after Close = %v (delivered %d, dropped %d), want Closed, uncounted", got, f.Delivered(), f.Dropped())
	}
	w, closed := f.Take()
	if w == nil || closed {
		t.Fatalf("Take after Close = %v, %v; want the waiting entry", w, closed)
	}
	f.Done(w)
	if w, closed := f.Take(); w != nil || !closed {
		t.Errorf("Take of an empty closed Fold = %v, %v; want nil, closed", w, closed)
	}
}

// TestFlushCoversTheFolds: a sink's Fold is fed by Publish on the
// recording goroutine; Flush returns once every event published before
// it is dealt with, folded ones included; Stop closes the Fold at its
// position; Shutdown refuses later events as DroppedClosed.
func TestFlushCoversTheFolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		p := newPipeline(t, 100, &log)
		q := p.NewFold(100)
		gate := make(chan struct{})
		c, err := p.StartSink(q, "sink", log.Logger(), func(c *Consumer[*v1.Event, int]) {
			n := 0
			for {
				w, closed := q.Take()
				if w == nil {
					if closed {
						return
					}
					<-q.Ready()
					continue
				}
				<-gate
				n += w.Events
				c.Reach(q.Done(w), &n)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		p.Publish(log.Logger(), reasoned("e0", "a"))
		synctest.Wait()          // e0's entry is taken alone; the consumer waits at the gate
		for i := 1; i < 6; i++ { // b1 a2 b3 a4 b5: two entries, b's first
			p.Publish(log.Logger(), reasoned(fmt.Sprint("e", i), []string{"a", "b"}[i%2]))
		}
		done := make(chan error)
		go func() { done <- p.Flush(context.Background()) }()
		for range 3 {
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("Flush returned %v before the three entries were dealt with", err)
			default:
			}
			gate <- struct{}{}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if tl := c.Tally(); tl.Counts != 6 || tl.Handled != 6 || tl.Queued != 6 {
			t.Errorf("after Flush: %+v, want the 6 events dealt with", tl)
		}
		c.Stop()
		p.Publish(log.Logger(), reasoned("late", "a"))
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.Publish(log.Logger(), reasoned("closed", "a"))
		if tl := c.Tally(); tl.Queued != 6 {
			t.Errorf("after Stop: %+v, want nothing more owed", tl)
		}
		if r := p.RecorderCounts(); r.Queued != 7 || r.DroppedClosed != 1 {
			t.Errorf("RecorderCounts() = %+v, want 7 queued, 1 refused after shutdown", r)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Flush(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
	})
}

// BenchmarkFoldOffer: a repeat folds without allocating (0 allocs/op).
func BenchmarkFoldOffer(b *testing.B) {
	b.ReportAllocs()
	f := newFold[*v1.Event, string, int](10, countReasons{})
	evs := []*v1.Event{reasoned("a", "a"), reasoned("b", "b")}
	f.Offer(evs[0])
	f.Offer(evs[1])
	i := 0
	for b.Loop() {
		f.Offer(evs[i&1])
		i++
	}
}

// TestFoldAbandon: Abandon removes every waiting entry unhandled and
// counts their events at once, while the taker still holds the entry it
// took; the Fold is closed, and Done then reports every delivered event
// dealt with.
func TestFoldAbandon(t *testing.T) {
	f := newFold(4, byReason(10))
	for i, r := range []string{"A", "B", "A", "C", "B"} {
		f.Offer(reasoned(fmt.Sprint("e", i), r))
	}
	held, _ := f.Take() // A, with its repeat
	if n := f.Abandon(); n != 3 {
		t.Errorf("Abandon() = %d, want the 3 events of B and C", n)
	}
	if got := f.Offer(reasoned("late", "A")); got != Closed {
		t.Errorf("Offer after Abandon = %v, want Closed", got)
	}
	if w, closed := f.Take(); w != nil || !closed {
		t.Errorf("Take() = %v, %v; want nothing, closed", w, closed)
	}
	if got := f.Done(held); got != 5 {
		t.Errorf("Done() = %d, want all 5 delivered events dealt with", got)
	}
	if f.Abandoned() != 3 || f.Folded() != 2 || f.Delivered() != 5 {
		t.Errorf("Abandoned, Folded, Delivered = %d, %d, %d; want 3, 2, 5", f.Abandoned(), f.Folded(), f.Delivered())
	}
}

// countReasons folds every event with its reason's entry, counting them.
type countReasons struct{}

func (countReasons) FoldKey(e *v1.Event) (string, bool) { return e.Reason, true }

func (countReasons) Fold(w *Entry[*v1.Event, string, int], _ *v1.Event) bool { w.Data++; return true }

func (countReasons) ResetEntry(*int) {}
