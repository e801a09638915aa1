package instrument

import (
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestTrail follows one queue through collections at explicit times: the
// age is the time since the first collection that saw the value in front.
func TestTrail(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		at              int
		entered, queued int
		want            time.Duration
	}{
		{0, 3, 3, 0},                 // first seen: 0, 1, 2 queued
		{10, 3, 3, 10 * time.Second}, // nothing read
		{20, 5, 4, 20 * time.Second}, // 0 read; 1 was seen at 0 s
		{30, 8, 5, 10 * time.Second}, // 1 and 2 read; 3 seen first at 20 s
		{40, 8, 1, 10 * time.Second}, // 7 in front, entered by 30 s
		{50, 8, 0, 0},                // empty
		{60, 9, 1, 0},                // 8 first seen now
	}
	var tr trail
	for _, tc := range tests {
		bl := broadcast.Backlog{Entered: uint64(tc.entered), Queued: tc.queued}
		if got := tr.observe(at(tc.at), bl); got != tc.want {
			t.Errorf("at %d s, observe(%+v) = %v, want %v", tc.at, bl, got, tc.want)
		}
	}
}

// TestTrailBounded: a queue stuck for many collections while values keep
// entering keeps at most maxMarks marks, and its front's age stays exact.
func TestTrailBounded(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var tr trail
	for i := range 10 * maxMarks {
		now := t0.Add(time.Duration(i) * time.Second)
		got := tr.observe(now, broadcast.Backlog{Entered: uint64(i + 1), Queued: i + 1}) // DropOldest keeps none out
		if want := time.Duration(i) * time.Second; got != want {
			t.Fatalf("collection %d: age %v, want %v", i, got, want)
		}
		if len(tr.marks) > maxMarks {
			t.Fatalf("collection %d: %d marks, want at most %d", i, len(tr.marks), maxMarks)
		}
	}
}

// TestAgesForget: the trail of a watcher no longer listed is forgotten.
func TestAgesForget(t *testing.T) {
	a := NewAges()
	list := []broadcast.Backlog{{Watcher: 1, Entered: 2, Queued: 2}, {Watcher: 2, Entered: 5, Queued: 1}}
	got := a.Observe(func(dst []broadcast.Backlog) []broadcast.Backlog { return append(dst, list...) })
	if got.Deepest != 2 || len(a.trails) != 2 {
		t.Fatalf("deepest %d, %d trails; want 2, 2", got.Deepest, len(a.trails))
	}
	list = list[1:]
	got = a.Observe(func(dst []broadcast.Backlog) []broadcast.Backlog { return append(dst, list...) })
	if got.Deepest != 1 || len(a.trails) != 1 || a.trails[2] == nil {
		t.Errorf("deepest %d, trails %v; want 1, watcher 2's alone", got.Deepest, a.trails)
	}
}
