package natsbridge_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// handOut is one value a reader handed out: when Receive returned it,
// and when its handler returned (zero while it runs).
type handOut struct {
	reader string
	id     int
	seq    uint64
	handed time.Time
	done   time.Time
}

// handOuts records every hand-out of a set of readers.
type handOuts struct {
	mu   sync.Mutex
	recs []*handOut
}

func (h *handOuts) add(r *handOut) {
	h.mu.Lock()
	h.recs = append(h.recs, r)
	h.mu.Unlock()
}

func (h *handOuts) finish(r *handOut) {
	h.mu.Lock()
	r.done = time.Now()
	h.mu.Unlock()
}

func (h *handOuts) snapshot() []handOut {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]handOut, len(h.recs))
	for i, r := range h.recs {
		out[i] = *r
	}
	return out
}

// missing returns the IDs 1..n whose handler never finished.
func (h *handOuts) missing(n int) []int {
	seen := map[int]bool{}
	for _, r := range h.snapshot() {
		if !r.done.IsZero() {
			seen[r.id] = true
		}
	}
	var out []int
	for i := 1; i <= n; i++ {
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}

// runReader reads w with Receive, handing each value to one of 4 workers
// whose handler takes ~1ms, then Done.
func runReader(ctx context.Context, name string, w *natsbridge.Watcher[Order], log *handOuts) (stopped <-chan struct{}) {
	done := make(chan struct{})
	work := make(chan struct {
		d handle.Delivery[Order]
		r *handOut
	}, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for j := range work {
				time.Sleep(time.Millisecond) // the handler's work
				log.finish(j.r)
				w.Done(j.d.Seq)
			}
		})
	}
	go func() {
		defer close(done)
		defer wg.Wait()
		defer close(work)
		for {
			d, err := w.Receive(ctx)
			if err != nil {
				return
			}
			if d.Err != nil {
				w.Done(d.Seq)
				continue
			}
			r := &handOut{reader: name, id: d.Value.ID, seq: d.Seq, handed: time.Now()}
			log.add(r)
			work <- struct {
				d handle.Delivery[Order]
				r *handOut
			}{d, r}
		}
	}()
	return done
}

// overlapReport analyses a run's hand-outs: values handled by two
// readers whose [handed, done] intervals overlap; hand-outs by one reader
// between two of the other less than 20ms apart; the longest pause in
// hand-outs after from (until end, if end is not zero: values still
// missing); the values begun more than once.
type overlapReport struct {
	sameValue   []string // a value in the hands of both readers at once
	interleaved []string // x, y, x hand-outs with the x's < 20ms apart
	maxGap      time.Duration
	maxGapAt    time.Time
	twice       int
}

func analyse(recs []handOut, from, end time.Time) overlapReport {
	var r overlapReport
	runs := make([]hrun, 0, len(recs))
	seen := map[int]bool{}
	for _, h := range recs {
		if seen[h.id] {
			r.twice++
		}
		seen[h.id] = true
		end := int64(1) << 62 // its handler still runs
		if !h.done.IsZero() {
			end = h.done.UnixNano()
		}
		runs = append(runs, hrun{member: h.reader, id: h.id, seq: h.seq, start: h.handed.UnixNano(), end: end})
	}
	r.sameValue = overlaps(runs, strconv.Itoa) // keyed by the value itself
	sorted := slices.Clone(recs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].handed.Before(sorted[j].handed) })
	lastBy := map[string]handOut{}
	for i, h := range sorted {
		if prev, ok := lastBy[h.reader]; ok {
			for _, mid := range sorted[:i] {
				if mid.reader != h.reader && mid.handed.After(prev.handed) && h.handed.Sub(prev.handed) < 20*time.Millisecond {
					r.interleaved = append(r.interleaved, fmt.Sprintf("%s handed %d at %s and %d at %s; %s handed %d at %s between",
						h.reader, prev.id, prev.handed.Format("15:04:05.000000"), h.id, h.handed.Format("15:04:05.000000"),
						mid.reader, mid.id, mid.handed.Format("15:04:05.000000")))
					break
				}
			}
		}
		lastBy[h.reader] = h
		if i > 0 && h.handed.After(from) {
			prevAt := sorted[i-1].handed
			if prevAt.Before(from) {
				prevAt = from
			}
			if g := h.handed.Sub(prevAt); g > r.maxGap {
				r.maxGap, r.maxGapAt = g, prevAt
			}
		}
	}
	if !end.IsZero() && len(sorted) > 0 {
		last := sorted[len(sorted)-1].handed
		if last.Before(from) {
			last = from
		}
		if g := end.Sub(last); g > r.maxGap {
			r.maxGap, r.maxGapAt = g, last
		}
	}
	return r
}

// TestDurableRecordLostWhileReading: two readers of one durable position
// (a Topic and a connection each), a publisher flowing, handlers of ~1ms
// on 4 workers each; the position's record is lost while they read (by
// hand): its bucket deleted (and made again by hand, without herald's
// mark), or its key purged, or deleted. No value in
// the hands of both readers at once, no interleaved hand-outs, every
// value handled, no pause in hand-outs longer than three takeover times
// (the bucket is made again), values begun twice no more than
// Redelivered (the next reader counts all the consumer delivered), and
// the loss surfaced (a log line, Err, or a counter).
func TestDurableRecordLostWhileReading(t *testing.T) {
	for _, how := range []string{"bucket-deleted", "bucket-made-by-hand", "key-purged", "key-deleted"} {
		t.Run(how, func(t *testing.T) { recordLost(t, how) })
	}
}

func recordLost(t *testing.T, how string) {
	const takeover = 2 * time.Second
	const n = 3000
	s := startServer(t, embedded.Options{})
	_, jsA := connect(t, s)
	_, jsB := connect(t, s)
	ctx := testCtx(t)
	name := "lost." + strings.ReplaceAll(how, "-", "")
	recA, recB := &logRecorder{}, &logRecorder{}
	ta := newTopic(t, jsA, name, natsbridge.TopicOptions{Logger: recA.Logger()})
	tb := newTopic(t, jsB, name, natsbridge.TopicOptions{Logger: recB.Logger()})
	a := watch(t, ta, natsbridge.WatchOptions{Durable: "d", Takeover: takeover})
	b := watch(t, tb, natsbridge.WatchOptions{Durable: "d", Takeover: takeover})
	log := &handOuts{}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	aDone := runReader(rctx, "a", a, log)
	bDone := runReader(rctx, "b", b, log)

	published := make(chan error, 1)
	go func() {
		p, err := ta.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			published <- err
			return
		}
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
			if i%5 == 0 {
				time.Sleep(10 * time.Millisecond) // a steady flow, ~500/s: the load, not a synchronisation
			}
		}
		published <- p.Shutdown(ctx)
	}()
	eventually(t, "500 values handed out", func() bool { return len(log.snapshot()) >= 500 })

	kv, err := jsA.KeyValue(ctx, "herald_"+ta.Stream())
	if err != nil {
		t.Fatal(err)
	}
	faultAt := time.Now()
	switch how {
	case "bucket-deleted":
		err = jsA.DeleteKeyValue(ctx, "herald_"+ta.Stream())
	case "bucket-made-by-hand": // deleted and made again at once, without herald's mark
		if err = jsA.DeleteKeyValue(ctx, "herald_"+ta.Stream()); err == nil {
			_, err = jsA.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "herald_" + ta.Stream()})
		}
	case "key-purged":
		err = kv.Purge(ctx, "d")
	case "key-deleted":
		err = kv.Delete(ctx, "d")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	bound := 30 * time.Second
	deadline := time.Now().Add(bound)
	for len(log.missing(n)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // a bounded poll of the handlers' record
	}
	missing := log.missing(n)
	var end time.Time
	if len(missing) > 0 {
		end = time.Now()
	}
	rep := analyse(log.snapshot(), faultAt, end)
	as, bs := a.Stats(), b.Stats()
	logFault(t, "record lost (%s): longest pause in hand-outs after it %v; %d values begun twice, Redelivered %d + %d",
		how, rep.maxGap.Round(time.Millisecond), rep.twice, as.Redelivered, bs.Redelivered)
	surfaced := strings.Contains(recA.String()+recB.String(), "record") || as.Restarts+bs.Restarts > 0 || a.Err() != nil || b.Err() != nil
	if len(missing) > 0 {
		t.Errorf("%d values of %d never handled %v after the publisher finished (first %v)", len(missing), n, bound, missing[:min(10, len(missing))])
	}
	if rep.maxGap > 3*takeover {
		t.Errorf("hand-outs paused %v (from %v after the fault), more than three takeover times", rep.maxGap.Round(time.Millisecond), rep.maxGapAt.Sub(faultAt).Round(time.Millisecond))
	}
	if len(rep.sameValue) > 0 {
		t.Errorf("%d values in the hands of both readers at once: %v", len(rep.sameValue), rep.sameValue[:min(5, len(rep.sameValue))])
	}
	if len(rep.interleaved) > 0 {
		t.Errorf("%d interleaved hand-outs: %v", len(rep.interleaved), rep.interleaved[:min(5, len(rep.interleaved))])
	}
	if uint64(rep.twice) > as.Redelivered+bs.Redelivered {
		t.Errorf("%d values begun twice, Redelivered %d+%d", rep.twice, as.Redelivered, bs.Redelivered)
	}
	if !surfaced {
		t.Errorf("the record's loss surfaced nowhere: no log line, no Restarts, no Err")
	}
	cancel()
	a.Stop()
	b.Stop()
	<-aDone
	<-bDone
	if t.Failed() {
		t.Logf("a's log:\n%s", tail(recA.String(), 40))
		t.Logf("b's log:\n%s", tail(recB.String(), 40))
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = append([]string{fmt.Sprintf("… %d lines before", len(l)-lines)}, l[len(l)-lines:]...)
	}
	return strings.Join(l, "\n")
}
