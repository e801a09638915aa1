// Command domain-events is a small job runner that publishes typed events
// with herald, with no Kubernetes in sight:
//
//   - an audit log that must write every event (policy Block), each job's
//     in order, several jobs at once, retrying a failed write (a
//     handle.Pool);
//   - a dashboard that only cares about the latest state and reads slowly
//     (policy DropOldest: it never holds the runner back);
//   - an alerter that folds repeated failures into counts (correlate), and
//     is told in a summary what its spam filter skipped.
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
	"slices"
	"sync"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/handle"
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

// run runs the jobs with the three consumers watching, then prints what
// each consumer saw and the broadcaster's counters.
func run(out io.Writer) error {
	ctx := context.Background()

	// One broadcaster for the service. The zero Options give a queue of 100
	// per watcher and 25 between publishers and the distributor.
	events := broadcast.New[JobEvent](broadcast.Options{})
	w, err := subscribe(events)
	if err != nil {
		return err
	}

	// The audit log writes each job's events in order, four jobs at a
	// time, and retries a write that fails (see auditLog.write).
	audit := &auditLog{byJob: map[string][]int{}}
	writer := handle.New(w.audit, func(e JobEvent) string { return e.Job }, audit.write, handle.Options{Workers: 4})

	// The other consumers run on goroutines this program owns and waits
	// for.
	var wg sync.WaitGroup
	alerts := newAlerter()
	wg.Go(func() { alerts.read(w.alerts) })

	// The dashboard is slow: it reads only after the run, to show that it
	// kept the newest events and dropped the oldest, counted.
	published, err := runJobs(ctx, events)
	if err != nil {
		return err
	}

	if err := finish(ctx, events, writer); err != nil {
		return err
	}
	wg.Wait()

	ws := writer.Stats()
	fmt.Fprintf(out, "published %d events; audit wrote %d (Block: none lost), each job's in order: %v; %d write retried\n",
		published, ws.Handled, audit.inOrder(), ws.Retries)
	printDashboard(out, w.dashboard)
	alerts.print(out)
	s := events.Stats()
	fmt.Fprintf(out, "broadcaster: published %d, delivered %d, dropped oldest %d\n", s.Published, s.Delivered, s.DroppedOldest)
	return nil
}

// finish waits until every event is in the watchers' queues and written
// by the audit log, then shuts the writer and the broadcaster down:
// Shutdown delivers everything published, then ends every watcher's read
// loop.
func finish(ctx context.Context, events *broadcast.Broadcaster[JobEvent], writer *handle.Pool[JobEvent, string]) error {
	if err := events.Flush(ctx); err != nil {
		return err
	}
	if err := writer.Flush(ctx); err != nil {
		return err
	}
	if err := writer.Shutdown(ctx); err != nil {
		return err
	}
	return events.Shutdown(ctx)
}

// auditLog is the audit consumer's store: the events of each job, in the
// order it wrote them.
type auditLog struct {
	mu     sync.Mutex // guards byJob, failed
	byJob  map[string][]int
	failed bool
}

// write stores e. Its first write of a failure fails (a disk that
// hiccups): the Pool writes it again after a moment, and the job's later
// events wait for it.
func (a *auditLog) write(_ context.Context, e JobEvent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.Status == "failed" && !a.failed {
		a.failed = true
		return fmt.Errorf("audit: write of event %d failed", e.Seq)
	}
	a.byJob[e.Job] = append(a.byJob[e.Job], e.Seq)
	return nil
}

// inOrder reports whether every job's events were written in the order
// they were published.
func (a *auditLog) inOrder() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, seqs := range a.byJob {
		if !slices.IsSorted(seqs) {
			return false
		}
	}
	return true
}

// consumers are the service's three watchers, each with the full-queue
// policy its job calls for.
type consumers struct {
	audit     *broadcast.Watcher[JobEvent] // every event, none lost
	dashboard *broadcast.Watcher[JobEvent] // the latest few
	alerts    *broadcast.Watcher[JobEvent] // every event, for the failures
}

// subscribe registers the audit log, the dashboard and the alerter with
// events.
func subscribe(events *broadcast.Broadcaster[JobEvent]) (consumers, error) {
	var c consumers
	var err error
	// The audit log loses nothing: Block makes the runner wait if the audit
	// consumer falls behind by more than its queue.
	if c.audit, err = events.WatchWith(broadcast.WatchOptions{Full: broadcast.Block}); err != nil {
		return c, err
	}
	// The dashboard shows the freshest state: with DropOldest a slow
	// dashboard skips stale events instead of slowing anyone down.
	if c.dashboard, err = events.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: broadcast.DropOldest}); err != nil {
		return c, err
	}
	// The alerter reads every failure.
	c.alerts, err = events.Watch()
	return c, err
}

// runJobs plays a run of the service: three jobs for six rounds, then one
// failing in a tight loop. Each event is published with the next sequence
// number; it returns how many were published.
func runJobs(ctx context.Context, events *broadcast.Broadcaster[JobEvent]) (int, error) {
	seq := 0
	publish := func(e JobEvent) error {
		seq++
		e.Seq = seq
		return events.Publish(ctx, e)
	}
	for round := range 6 {
		for _, e := range []JobEvent{
			{Job: "backup", Status: "started"},
			{Job: "backup", Status: "failed", Error: "disk full"}, // the same failure, 6 times
			{Job: "report", Status: "started"},
			{Job: "report", Status: "failed", Error: fmt.Sprintf("timeout after %ds", 30+round)}, // a new error each time
			{Job: "cleanup", Status: "done"},
		} {
			if err := publish(e); err != nil {
				return seq, err
			}
		}
	}
	for range 15 { // a job failing in a tight loop
		if err := publish(JobEvent{Job: "sync", Status: "failed", Error: "connection refused"}); err != nil {
			return seq, err
		}
	}
	return seq, nil
}

// printDashboard reads what the dashboard's queue kept and prints it with
// the count of what DropOldest dropped.
func printDashboard(out io.Writer, dashboard *broadcast.Watcher[JobEvent]) {
	var latest []int
	for e := range dashboard.All() {
		latest = append(latest, e.Seq)
	}
	fmt.Fprintf(out, "dashboard (queue 4, DropOldest) kept events %v and dropped %d older ones\n", latest, dashboard.Dropped())
}

// alertKey identifies an alert: a job and its error. The grouping and the
// spam filter use it with one of the two fields left empty.
type alertKey struct{ Job, Error string }

// alert is one line of the alerter's report, as an alert store keeps it.
type alert struct {
	event JobEvent
	count int // as last recorded
	// summarized counts the failures the spam filter skipped after the
	// last one recorded, reported by the correlator's summaries.
	summarized int
}

// alerter folds failures into alerts and keeps them, as an alert store
// would, in the order they first appeared. What the spam filter skips is
// not its business: the correlator reports it, in summaries.
type alerter struct {
	folder *correlate.Correlator[JobEvent, alertKey]
	order  []alertKey
	store  map[alertKey]*alert
}

// newAlerter returns an alerter with the service's folding rules.
// Repeated failures of the same job with the same error are one alert
// with a count; many different errors of one job become one combined
// alert; a job that fails in a loop is rate limited, and what that skips
// comes back in a summary.
func newAlerter() *alerter {
	a := &alerter{store: map[alertKey]*alert{}}
	a.folder = correlate.New(func(e JobEvent) alertKey { return alertKey{e.Job, e.Error} },
		correlate.Options[JobEvent, alertKey]{
			Group: func(e JobEvent) (alertKey, alertKey) { return alertKey{Job: e.Job}, alertKey{Error: e.Error} },
			Combine: func(e JobEvent, _ time.Time) JobEvent {
				e.Error = correlate.CombinedPrefix + e.Error
				return e
			},
			MaxMembers: 5,                                                         // 5 distinct errors of a job: combine
			Spam:       func(e JobEvent) alertKey { return alertKey{Job: e.Job} }, // per job
			Burst:      10,
			// Runs on the goroutine that calls Correlate or Flush: read's.
			Report: func(s correlate.Summary[JobEvent, alertKey]) { a.alert(s.Key, s.Event).summarized += s.Count },
		})
	return a
}

// alert returns the stored alert of key k, storing e as it if there is
// none yet.
func (a *alerter) alert(k alertKey, e JobEvent) *alert {
	al := a.store[k]
	if al == nil {
		al = &alert{event: e}
		a.store[k] = al
		a.order = append(a.order, k)
	}
	return al
}

// read folds every failure w delivers, until w's events end, and then
// asks the correlator for the summaries of what it skipped. A service
// that runs on would call Flush on a ticker too (every minute, say), so
// that a flood's tail is reported while it runs.
func (a *alerter) read(w *broadcast.Watcher[JobEvent]) {
	for e := range w.All() {
		if e.Status != "failed" {
			continue
		}
		r, err := a.folder.Correlate(e)
		if err != nil || r.Skip {
			continue // a key function panicked (nothing here can); or skipped: a summary will tell
		}
		al := a.alert(r.Key, r.Event)
		al.event, al.count = r.Event, r.Count
	}
	a.folder.Flush()
}

// print writes one line per alert, in the order they first appeared, and
// the correlator's account of every failure it was given.
func (a *alerter) print(out io.Writer) {
	fmt.Fprintln(out, "alerts:")
	for _, k := range a.order {
		al := a.store[k]
		fmt.Fprintf(out, "  %-8s %-52s x%d", al.event.Job, al.event.Error, al.count)
		if al.summarized > 0 {
			fmt.Fprintf(out, " (+%d skipped, reported by a summary)", al.summarized)
		}
		fmt.Fprintln(out)
	}
	s := a.folder.Stats()
	fmt.Fprintf(out, "correlator: %d failures = %d recorded + %d carried by a later count + %d in summaries + %d unreported\n",
		s.Correlated, s.Correlated-s.Skipped, s.Carried, s.Summarized, s.Unreported)
}
