package burst

import (
	"testing"
	"time"
)

func TestBurst(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	type step struct {
		at    time.Duration
		n     uint64
		count uint64
		due   bool
	}
	steps := []step{
		{0, 1, 1, true},                 // the first occurrence: a line at once
		{time.Second, 5, 0, false},      // within the interval: counted
		{9 * time.Second, 1, 0, false},  // still within
		{10 * time.Second, 2, 8, true},  // the interval passed: a line with all since the last
		{15 * time.Second, 3, 0, false}, // a new burst starts counting
	}
	var b Burst // DefaultInterval
	for _, s := range steps {
		count, due := b.Add(t0.Add(s.at), s.n)
		if count != s.count || due != s.due {
			t.Errorf("Add(+%v, %d) = %d, %v; want %d, %v", s.at, s.n, count, due, s.count, s.due)
		}
	}
	if rest := b.Rest(); rest != 3 {
		t.Errorf("Rest() = %d, want the 3 no line reported", rest)
	}
	if rest := b.Rest(); rest != 0 {
		t.Errorf("second Rest() = %d, want 0", rest)
	}
}

func TestBurstInterval(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	b := Burst{Interval: time.Second}
	if count, due := b.Add(t0, 1); count != 1 || !due {
		t.Fatalf("first Add = %d, %v; want 1, true", count, due)
	}
	if _, due := b.Add(t0.Add(999*time.Millisecond), 1); due {
		t.Fatal("Add within the interval is due")
	}
	if count, due := b.Add(t0.Add(time.Second), 1); count != 2 || !due {
		t.Fatalf("Add after the interval = %d, %v; want 2, true", count, due)
	}
}

// TestBurstFromZeroTime: a clock that reads the zero time, as a fake one
// may, gets the same one line per Interval as any other.
func TestBurstFromZeroTime(t *testing.T) {
	tests := []struct {
		name string
		t0   time.Time
	}{
		{"zero time", time.Time{}},
		{"Unix epoch", time.Unix(0, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Burst{Interval: time.Second}
			if count, due := b.Add(tc.t0, 1); count != 1 || !due {
				t.Fatalf("first Add = %d, %v; want 1, true", count, due)
			}
			if count, due := b.Add(tc.t0, 1); count != 0 || due {
				t.Fatalf("Add at the same time = %d, %v; want 0, false", count, due)
			}
			if count, due := b.Add(tc.t0.Add(time.Second), 1); count != 2 || !due {
				t.Fatalf("Add after the interval = %d, %v; want 2, true", count, due)
			}
		})
	}
}

// TestBurstClockSetBack: a clock set back by an Interval or more gets a
// line at once, not a quiet spell until it passes the old time again;
// times a little out of order, as concurrent callers read them, are
// counted as within the interval.
func TestBurstClockSetBack(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	b := Burst{Interval: time.Second}
	steps := []struct {
		at    time.Duration
		count uint64
		due   bool
	}{
		{0, 1, true},
		{-999 * time.Millisecond, 0, false}, // read before the last line, counted after it
		{-time.Hour, 2, true},               // set back an hour: a line at once
		{-time.Hour + 500*time.Millisecond, 0, false},
		{-time.Hour + time.Second, 2, true}, // one line per Interval from the new time
	}
	for _, s := range steps {
		if count, due := b.Add(t0.Add(s.at), 1); count != s.count || due != s.due {
			t.Errorf("Add(%+v) = %d, %v; want %d, %v", s.at, count, due, s.count, s.due)
		}
	}
}
