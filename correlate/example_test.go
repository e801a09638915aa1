package correlate_test

import (
	"fmt"
	"time"

	"github.com/heraldgo/herald/correlate"
)

// Alert is a plain domain event: nothing about it is Kubernetes.
type Alert struct {
	Service, Check, Severity, Message string
}

// Repeats are counted, ten distinct messages about one check are combined
// into one alert, and a service that floods is skipped.
func Example() {
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := correlate.New(func(a Alert) Alert { return a }, correlate.Options[Alert, Alert]{
		// Alerts about one check that differ only in message are similar.
		Group: func(a Alert) (group, member Alert) {
			return Alert{Service: a.Service, Check: a.Check, Severity: a.Severity}, Alert{Message: a.Message}
		},
		Combine: func(a Alert, _ time.Time) Alert {
			a.Message = correlate.CombinedPrefix + a.Message
			return a
		},
		// Each service may raise 25 alerts at once, then one every 5 minutes.
		Spam:  func(a Alert) Alert { return Alert{Service: a.Service} },
		Clock: clock,
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

	for i := range 10 { // ten different messages about one check
		clock.t = clock.t.Add(time.Second)
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
	// flood: skipped 5 of 30
}

// A correlator that only counts exact repeats needs nothing but a key.
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
