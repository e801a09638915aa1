package correlate_test

import (
	"fmt"
	"time"

	"github.com/heraldgo/herald/correlate"
)

// fakeClock is a Clock that moves only when told to.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// Alert is a plain domain event.
type Alert struct {
	Service, Check, Severity, Message string
}

// alertKey: an alert repeats when every field is the same.
func alertKey(a Alert) Alert { return a }

// alertGroup: alerts about one check that differ only in message are
// similar.
func alertGroup(a Alert) (group, member Alert) {
	return Alert{Service: a.Service, Check: a.Check, Severity: a.Severity}, Alert{Message: a.Message}
}

// alertSpam: each service has its own token bucket.
func alertSpam(a Alert) Alert { return Alert{Service: a.Service} }

// alertCombine: the stand-in for a group says so in its message.
func alertCombine(a Alert, _ time.Time) Alert {
	a.Message = correlate.CombinedPrefix + a.Message
	return a
}

// Repeats are counted, ten distinct messages about one check are combined
// into one alert, and a service that floods is skipped.
func Example() {
	clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := correlate.New(alertKey, correlate.Options[Alert, Alert]{
		Group:   alertGroup,
		Combine: alertCombine,
		Spam:    alertSpam, // 25 alerts at once per service, then one every 5 minutes
		Clock:   clock,
	})
	show := func(a Alert) {
		r, _ := c.Correlate(a)
		switch {
		case r.Skip:
			fmt.Printf("skip    %s (count %d)\n", a.Message, r.Count)
		case r.Count > 1:
			fmt.Printf("repeat  %s: count %d\n", r.Event.Message, r.Count)
		default:
			fmt.Printf("record  %s\n", r.Event.Message)
		}
	}

	disk := Alert{Service: "db", Check: "disk", Severity: "warning", Message: "disk 91% full"}
	show(disk)
	show(disk) // the same alert again: a count, not a new record

	for i := range 11 { // different messages about one check
		clock.Advance(time.Second)
		show(Alert{Service: "api", Check: "latency", Severity: "critical", Message: fmt.Sprintf("p99 %dms", 500+i)})
	}

	flood := Alert{Service: "batch", Check: "job", Severity: "info", Message: "job failed"}
	skipped := 0
	for range 30 { // one service, 30 alerts in the same instant
		if r, _ := c.Correlate(flood); r.Skip {
			skipped++
		}
	}
	fmt.Println("flood: skipped", skipped, "of 30")
	clock.Advance(5 * time.Minute)
	show(flood) // a token again: recorded, with the skipped ones counted
	// Output:
	// record  disk 91% full
	// repeat  disk 91% full: count 2
	// record  p99 500ms
	// record  p99 501ms
	// record  p99 502ms
	// record  p99 503ms
	// record  p99 504ms
	// record  p99 505ms
	// record  p99 506ms
	// record  p99 507ms
	// record  p99 508ms
	// record  (combined from similar events): p99 509ms
	// repeat  (combined from similar events): p99 510ms: count 2
	// flood: skipped 5 of 30
	// repeat  job failed: count 31
}

// A Correlator that only counts exact repeats needs nothing but a key.
func ExampleNew() {
	type job struct{ Name, Status string }
	c := correlate.New(func(j job) job { return j }, correlate.Options[job, job]{})
	for range 3 {
		r, _ := c.Correlate(job{"backup", "failed"})
		fmt.Println(r.Count)
	}
	// Output:
	// 1
	// 2
	// 3
}

// The sink assigns an id when it creates a record; Stored tells the
// Correlator, so that repeats know which record to update.
func ExampleCorrelator_Stored() {
	type record struct{ ID, Subject string }
	c := correlate.New(func(r record) string { return r.Subject }, correlate.Options[record, string]{})
	nextID := 100
	for range 3 {
		r, _ := c.Correlate(record{Subject: "backup failed"})
		if r.Previous.Count == 0 { // new: create it
			nextID++
			created := r.Event
			created.ID = fmt.Sprint("rec-", nextID)
			c.Stored(r.Key, correlate.Observation[record]{Count: r.Count, First: r.First, Last: created})
			fmt.Println("create", created.ID)
			continue
		}
		fmt.Printf("update %s: count %d\n", r.Previous.Last.ID, r.Count)
	}
	// Output:
	// create rec-101
	// update rec-101: count 2
	// update rec-101: count 3
}

// A flood stops: the values the spam filter skipped after the last one
// recorded are reported by Flush, which the application calls on a ticker
// of its own and once more when it stops.
func ExampleCorrelator_Flush() {
	clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := correlate.New(alertKey, correlate.Options[Alert, Alert]{
		Spam:  alertSpam,
		Burst: 3, // 3 alerts at once per service
		Clock: clock,
		Report: func(s correlate.Summary[Alert, Alert]) {
			fmt.Printf("summary %s: %d more (count %d), %v to %v\n",
				s.Event.Message, s.Count, s.Total, s.First.Format(time.TimeOnly), s.Last.Format(time.TimeOnly))
		},
	})
	for range 10 {
		clock.Advance(time.Second)
		if r, _ := c.Correlate(Alert{"db", "disk", "warning", "disk 91% full"}); !r.Skip {
			fmt.Printf("record  %s: count %d\n", r.Event.Message, r.Count)
		}
	}
	c.Flush() // on the application's ticker
	s := c.Stats()
	fmt.Printf("%d in: %d recorded, %d summarized, %d unreported\n", s.Correlated, s.Correlated-s.Skipped, s.Summarized, s.Unreported)
	// Output:
	// record  disk 91% full: count 1
	// record  disk 91% full: count 2
	// record  disk 91% full: count 3
	// summary disk 91% full: 7 more (count 10), 00:00:04 to 00:00:10
	// 10 in: 3 recorded, 7 summarized, 0 unreported
}
