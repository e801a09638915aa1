// Command domain-events is a small job runner that publishes typed events
// with herald, with no Kubernetes in sight:
//
//   - an audit consumer that must see every event (policy Block);
//   - a dashboard that only cares about the latest state and reads slowly
//     (policy DropOldest: it never holds the runner back);
//   - an alerter that folds repeated failures into counts (correlate).
//
// Run it with:
//
//	go run ./examples/domain-events
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "domain-events:", err)
		os.Exit(1)
	}
}

// JobEvent is the service's own event type: herald needs no interface,
// no registration, no runtime.Object.
type JobEvent struct {
	Job    string // which job
	Status string // "started", "failed" or "done"
	Error  string // why it failed
	Seq    int    // position in the run, to show ordering
}

func run(out io.Writer) error {
	ctx := context.Background()

	// One broadcaster for the service. The zero Options give a queue of 100
	// per watcher and 25 between publishers and the distributor.
	events := broadcast.New[JobEvent](broadcast.Options{})

	// The audit log loses nothing: Block makes the runner wait if the audit
	// consumer falls behind by more than its queue.
	audit, err := events.WatchWith(broadcast.WatchOptions{Full: broadcast.Block})
	if err != nil {
		return err
	}
	// The dashboard shows the freshest state: with DropOldest a slow
	// dashboard skips stale events instead of slowing anyone down.
	dashboard, err := events.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: broadcast.DropOldest})
	if err != nil {
		return err
	}
	// The alerter reads every failure.
	alerts, err := events.Watch()
	if err != nil {
		return err
	}

	// Consumers run on goroutines this program owns and waits for.
	var wg sync.WaitGroup
	var audited int
	wg.Go(func() {
		for range audit.All() { // All reads in batches: the fastest way to read
			audited++
		}
	})

	// Repeated failures of the same job with the same error are one alert
	// with a count; many different errors of one job become one combined
	// alert; a job that fails in a loop is rate limited.
	type alertKey struct{ Job, Error string }
	folder := correlate.New(func(e JobEvent) alertKey { return alertKey{e.Job, e.Error} },
		correlate.Options[JobEvent, alertKey]{
			Group: func(e JobEvent) (alertKey, alertKey) { return alertKey{Job: e.Job}, alertKey{Error: e.Error} },
			Combine: func(e JobEvent, _ time.Time) JobEvent {
				e.Error = correlate.CombinedPrefix + e.Error
				return e
			},
			MaxMembers: 5,                                                         // 5 distinct errors of a job: combine
			Spam:       func(e JobEvent) alertKey { return alertKey{Job: e.Job} }, // per job
			Burst:      10,
		})
	type alert struct {
		event    JobEvent
		count    int
		skipped  int
		combined bool
	}
	var alertOrder []alertKey
	alertsByKey := map[alertKey]*alert{}
	wg.Go(func() {
		for e := range alerts.All() {
			if e.Status != "failed" {
				continue
			}
			r, err := folder.Correlate(e)
			if err != nil {
				continue // a key function panicked; nothing here can
			}
			a := alertsByKey[r.Key]
			if a == nil {
				a = &alert{combined: r.Combined}
				alertsByKey[r.Key] = a
				alertOrder = append(alertOrder, r.Key)
			}
			if r.Skip {
				a.skipped++
				continue
			}
			a.event, a.count = r.Event, r.Count
		}
	})

	// The dashboard is slow: it reads only after the run, to show that it
	// kept the newest events and dropped the oldest, counted.
	seq := 0
	publish := func(job, status, errText string) error {
		seq++
		return events.Publish(ctx, JobEvent{Job: job, Status: status, Error: errText, Seq: seq})
	}
	for round := range 6 {
		if err := publish("backup", "started", ""); err != nil {
			return err
		}
		if err := publish("backup", "failed", "disk full"); err != nil { // the same failure, 6 times
			return err
		}
		if err := publish("report", "started", ""); err != nil {
			return err
		}
		if err := publish("report", "failed", fmt.Sprintf("timeout after %ds", 30+round)); err != nil { // a new error each time
			return err
		}
		if err := publish("cleanup", "done", ""); err != nil {
			return err
		}
	}
	for range 15 { // a job failing in a tight loop
		if err := publish("sync", "failed", "connection refused"); err != nil {
			return err
		}
	}

	// Shutdown delivers everything published, then ends every watcher's
	// read loop; wait for the consumers to finish.
	if err := events.Shutdown(ctx); err != nil {
		return err
	}
	wg.Wait()

	fmt.Fprintf(out, "published %d events; audit read %d (Block: none lost)\n", seq, audited)
	var latest []int
	for e := range dashboard.All() {
		latest = append(latest, e.Seq)
	}
	fmt.Fprintf(out, "dashboard (queue 4, DropOldest) kept events %v and dropped %d older ones\n", latest, dashboard.Dropped())
	fmt.Fprintln(out, "alerts:")
	for _, k := range alertOrder {
		a := alertsByKey[k]
		fmt.Fprintf(out, "  %-8s %-52s x%-3d (skipped %d)\n", a.event.Job, a.event.Error, a.count, a.skipped)
	}
	s := events.Stats()
	fmt.Fprintf(out, "broadcaster: published %d, delivered %d, dropped oldest %d\n", s.Published, s.Delivered, s.DroppedOldest)
	return nil
}
