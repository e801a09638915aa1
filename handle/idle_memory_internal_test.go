package handle

import "testing"

// TestAnIdleLaneGivesBackALongBacklogsRing: a lane whose key had a long
// backlog gives its ring back once empty (an idle or free lane would hold
// it for good: 5 000 keys that each had 200 values waiting held 339 MB
// with no value in the Pool); one whose backlogs stay short keeps it,
// so that it is not made again each time.
func TestAnIdleLaneGivesBackALongBacklogsRing(t *testing.T) {
	for _, c := range []struct {
		held int
		kept bool
	}{{3, true}, {keptRest, true}, {keptRest + 1, false}, {200, false}} {
		for _, drop := range []string{"pop", "truncate"} {
			var q vals[int]
			for i := range c.held {
				q.Push(entry[int]{v: i})
			}
			if drop == "pop" {
				for range c.held {
					q.Pop()
				}
			} else {
				q.Truncate(0)
			}
			if kept := q.rest != nil; q.Len() != 0 || kept != c.kept {
				t.Errorf("%d values held, emptied by %s: %d left, ring kept %v; want 0 left, ring kept %v", c.held, drop, q.Len(), kept, c.kept)
			}
			q.Push(entry[int]{v: 1}) // usable again
			q.Push(entry[int]{v: 2})
			if q.Len() != 2 || q.Head().v != 1 || q.At(1).v != 2 {
				t.Errorf("%d held, then 2 pushed: %d values, head %d", c.held, q.Len(), q.Head().v)
			}
		}
	}
}
