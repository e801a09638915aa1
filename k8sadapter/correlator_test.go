package k8sadapter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/k8sadapter"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// gen produces event sequences for the differential tests: a few objects,
// sources, reasons and messages, so that repeats, groups of similar events
// and spam all happen, with gaps around the aggregation window and the spam
// refill. It avoids the one case client-go decides at random: a message seen
// before in a group that has been combined (client-go then forgets a random
// member), until that group's window has lapsed.
type gen struct {
	group  func(*v1.Event) string // the correlator's grouping, as a string
	step   time.Duration          // if set, the clock advances this much per event
	rng    *rand.Rand
	window time.Duration
	max    int
	now    time.Time
	groups map[string]*genGroup
	recent []*v1.Event
	n      int
}

type genGroup struct {
	last     time.Time
	members  map[string]bool
	combined bool
}

func newGen(seed uint64, window time.Duration, max int, group func(*v1.Event) string) *gen {
	if group == nil {
		group = defaultGroup
	}
	return &gen{group: group, rng: rand.New(rand.NewPCG(seed, 7)), window: window, max: max, now: t0, groups: map[string]*genGroup{}}
}

// defaultGroup is client-go's default grouping of similar events.
func defaultGroup(e *v1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type, e.Reason, e.ReportingController, e.ReportingInstance}, "\x00")
}

var gaps = []time.Duration{0, 0, 0, time.Second, 7 * time.Second, 30 * time.Second, 299 * time.Second, 300 * time.Second, 301 * time.Second, 599 * time.Second, 600 * time.Second, 601 * time.Second, time.Hour}

func (g *gen) pick(s []string) string { return s[g.rng.IntN(len(s))] }

// next returns the time step before the event and the event: a repeat of a
// recent event, a similar event about a busy object, or any event.
func (g *gen) next() (time.Duration, *v1.Event) {
	gap := gaps[g.rng.IntN(len(gaps))]
	if g.rng.IntN(3) != 0 {
		gap = 0 // mostly bursts
	}
	if g.step != 0 {
		gap = g.step
	}
	g.now = g.now.Add(gap)
	g.n++
	var e *v1.Event
	switch r := g.rng.IntN(10); {
	case r < 4 && len(g.recent) > 0:
		e = g.recent[g.rng.IntN(len(g.recent))].DeepCopy()
	case r < 7:
		e = g.event("web-0", "Pod", "default", "", "kubelet", "node-a", "BackOff", v1.EventTypeWarning)
		e.Message = fmt.Sprintf("message %d", g.rng.IntN(14))
	default:
		e = g.event(g.pick([]string{"web-0", "web-1", "db-0"}), g.pick([]string{"Pod", "Pod", "Node"}),
			g.pick([]string{"default", "kube-system", ""}), g.pick([]string{"", "", "spec.containers{app}"}),
			g.pick([]string{"kubelet", "scheduler"}), g.pick([]string{"node-a", ""}),
			g.pick([]string{"BackOff", "Pulling", "Failed"}), g.pick([]string{v1.EventTypeNormal, v1.EventTypeWarning}))
		e.Message = fmt.Sprintf("message %d", g.rng.IntN(14))
		if g.rng.IntN(8) == 0 {
			e.Annotations = map[string]string{"a": "b"}
		}
	}
	e.Name = fmt.Sprintf("%s.%x", e.InvolvedObject.Name, g.now.UnixNano()+int64(g.n))
	e.FirstTimestamp, e.LastTimestamp = metav1.NewTime(g.now), metav1.NewTime(g.now)

	gk := g.group(e)
	grp := g.groups[gk]
	if grp == nil || g.now.Sub(grp.last) > g.window {
		grp = &genGroup{members: map[string]bool{}}
		g.groups[gk] = grp
	}
	if grp.combined && grp.members[e.Message] {
		e.Message = fmt.Sprintf("fresh message %d", g.n) // never seen: no random choice involved
	}
	grp.members[e.Message] = true
	grp.last = g.now
	if len(grp.members) >= g.max {
		grp.combined = true
	}
	if len(g.recent) < 20 {
		g.recent = append(g.recent, e)
	} else {
		g.recent[g.rng.IntN(len(g.recent))] = e
	}
	return gap, e
}

func (g *gen) event(name, kind, ns, fieldPath, component, host, reason, typ string) *v1.Event {
	e := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		InvolvedObject: v1.ObjectReference{
			Kind: kind, Namespace: ns, Name: name, UID: "uid-1", APIVersion: "v1", FieldPath: fieldPath,
		},
		Reason:              reason,
		Type:                typ,
		Source:              v1.EventSource{Component: component, Host: host},
		ReportingController: component,
		ReportingInstance:   host,
		Count:               1,
	}
	if e.Namespace == "" {
		e.Namespace = metav1.NamespaceDefault
	}
	return e
}

// TestEventCorrelateMatchesClientGo feeds the same generated events to
// client-go's EventCorrelator and to herald's, on identical fake clocks,
// and requires the same decision for every event: the same event (every
// field), the same patch byte for byte, the same skip. Half the written
// events are fed back with UpdateState, as a sink does.
func TestEventCorrelateMatchesClientGo(t *testing.T) {
	type variant struct {
		name  string
		opts  func(c *testclocks.FakeClock) record.CorrelatorOptions
		group func(*v1.Event) string
	}
	variants := []variant{
		{"defaults", func(c *testclocks.FakeClock) record.CorrelatorOptions { return record.CorrelatorOptions{Clock: c} }, nil},
		{"small caches and burst", func(c *testclocks.FakeClock) record.CorrelatorOptions {
			return record.CorrelatorOptions{Clock: c, LRUCacheSize: 7, BurstSize: 3, QPS: 1. / 30, MaxEvents: 4, MaxIntervalInSeconds: 60}
		}, nil},
		{"custom key functions", func(c *testclocks.FakeClock) record.CorrelatorOptions {
			return record.CorrelatorOptions{
				Clock:       c,
				KeyFunc:     func(e *v1.Event) (string, string) { return e.InvolvedObject.Name + "|" + e.Reason, e.Message },
				MessageFunc: func(e *v1.Event) string { return "combined: " + e.Reason },
				SpamKeyFunc: func(e *v1.Event) string { return e.InvolvedObject.Name + "|" + e.Message },
				BurstSize:   5,
			}
		}, func(e *v1.Event) string { return e.InvolvedObject.Name + "|" + e.Reason }},
	}
	const seeds, perSeed = 10, 1500
	var total, skips, patches, combined int
	for _, v := range variants {
		for seed := range uint64(seeds) {
			t.Run(fmt.Sprintf("%s/seed=%d", v.name, seed), func(t *testing.T) {
				anchorClock, heraldClock := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
				ao, ho := v.opts(anchorClock), v.opts(heraldClock)
				anchor := record.NewEventCorrelatorWithOptions(ao)
				herald := k8sadapter.NewEventCorrelatorWithOptions(ho)
				window, max := time.Duration(ao.MaxIntervalInSeconds)*time.Second, ao.MaxEvents
				if window == 0 {
					window = 600 * time.Second
				}
				if max == 0 {
					max = 10
				}
				g := newGen(seed, window, max, v.group)
				rng := rand.New(rand.NewPCG(seed, 9))
				for i := range perSeed {
					gap, e := g.next()
					anchorClock.Step(gap)
					heraldClock.Step(gap)
					want, werr := anchor.EventCorrelate(e.DeepCopy())
					got, gerr := herald.EventCorrelate(e.DeepCopy())
					if (werr != nil) != (gerr != nil) {
						t.Fatalf("event %d: error %v, client-go %v", i, gerr, werr)
					}
					sameResult(t, i, e, want, got)
					total++
					switch {
					case want.Skip:
						skips++
					case want.Event.Count > 1:
						patches++
					}
					if !want.Skip && want.Event.Message != e.Message {
						combined++
					}
					if !want.Skip && rng.IntN(2) == 0 {
						stored := want.Event.DeepCopy()
						stored.ResourceVersion = fmt.Sprint(i)
						anchor.UpdateState(stored)
						herald.UpdateState(stored.DeepCopy())
					}
				}
			})
		}
	}
	t.Logf("%d events compared: %d skipped, %d patches, %d combined", total, skips, patches, combined)
	// The comparison means something only if every path was taken often.
	if skips < total/20 || patches < total/10 || combined < total/50 {
		t.Errorf("generator too tame: %d skipped, %d patches, %d combined of %d", skips, patches, combined, total)
	}
}

// TestPanickingOptionFunctionChangesNothing arms one CorrelatorOptions
// function at a time to panic on one event in seven. herald must return
// the event as it is with an error wrapping correlate.ErrPanic, and then
// behave as if it had never seen that event: client-go, fed every event
// but the poisoned ones, decides every other event the same.
func TestPanickingOptionFunctionChangesNothing(t *testing.T) {
	keyFunc := func(e *v1.Event) (string, string) { return e.InvolvedObject.Name + "|" + e.Reason, e.Message }
	messageFunc := func(e *v1.Event) string { return "combined: " + e.Reason }
	spamKeyFunc := func(e *v1.Event) string { return e.InvolvedObject.Name + "|" + e.Message }
	tests := []struct {
		name string
		arm  func(o *record.CorrelatorOptions, boom func())
	}{
		{"KeyFunc", func(o *record.CorrelatorOptions, boom func()) {
			o.KeyFunc = func(e *v1.Event) (string, string) { boom(); return keyFunc(e) }
		}},
		{"MessageFunc", func(o *record.CorrelatorOptions, boom func()) {
			o.MessageFunc = func(e *v1.Event) string { boom(); return messageFunc(e) }
		}},
		{"SpamKeyFunc", func(o *record.CorrelatorOptions, boom func()) {
			o.SpamKeyFunc = func(e *v1.Event) string { boom(); return spamKeyFunc(e) }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			anchorClock, heraldClock := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
			opts := func(c *testclocks.FakeClock) record.CorrelatorOptions {
				return record.CorrelatorOptions{
					Clock: c, KeyFunc: keyFunc, MessageFunc: messageFunc, SpamKeyFunc: spamKeyFunc,
					LRUCacheSize: 16, BurstSize: 5, QPS: 1. / 30, MaxEvents: 4, MaxIntervalInSeconds: 60,
				}
			}
			armed := false
			boom := func() {
				if armed {
					panic(tc.name + " exploded")
				}
			}
			ho := opts(heraldClock)
			tc.arm(&ho, boom)
			anchor := record.NewEventCorrelatorWithOptions(opts(anchorClock))
			herald := k8sadapter.NewEventCorrelatorWithOptions(ho)
			g := newGen(5, 60*time.Second, 4, func(e *v1.Event) string { k, _ := keyFunc(e); return k })
			panics := 0
			for i := range 3000 {
				gap, e := g.next()
				anchorClock.Step(gap)
				heraldClock.Step(gap)
				armed = i%7 == 6
				got, err := herald.EventCorrelate(e.DeepCopy())
				armed = false
				if err != nil {
					if !errors.Is(err, correlate.ErrPanic) || !strings.HasSuffix(err.Error(), "panic in "+tc.name+": "+tc.name+" exploded") {
						t.Fatalf("event %d: error %v, want one wrapping correlate.ErrPanic, naming %s, with the panic value", i, err, tc.name)
					}
					if diff := cmp.Diff(e, got.Event); diff != "" || got.Patch != nil || got.Skip {
						t.Fatalf("event %d: after a panic, result %+v differs from the event as it is:\n%s", i, got, diff)
					}
					panics++
					continue // client-go never sees it
				}
				want, _ := anchor.EventCorrelate(e.DeepCopy())
				sameResult(t, i, e, want, got)
			}
			if panics < 50 {
				t.Errorf("only %d events made %s panic: the generator does not exercise it", panics, tc.name)
			}
		})
	}
}

// TestUpdateStateOddCounts stores counts a server should never return
// (negative, zero, the int32 edges) and correlates the same event again:
// the next count, or a new event, is client-go's.
func TestUpdateStateOddCounts(t *testing.T) {
	for _, count := range []int32{-5, -1, 0, 1, 1<<31 - 1, -1 << 31} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			anchor := record.NewEventCorrelator(testclocks.NewFakeClock(t0))
			herald := k8sadapter.NewEventCorrelator(testclocks.NewFakeClock(t0))
			e := fuzzEvent("kubelet", "node-1", "web-0", "", "BackOff", "back-off")
			for i := range 3 {
				want, _ := anchor.EventCorrelate(e.DeepCopy())
				got, _ := herald.EventCorrelate(e.DeepCopy())
				sameResult(t, i, e, want, got)
				stored := want.Event.DeepCopy()
				stored.Count, stored.ResourceVersion = count, fmt.Sprint("rv-", i)
				anchor.UpdateState(stored)
				herald.UpdateState(stored.DeepCopy())
			}
		})
	}
}

// TestEventCorrelatorConcurrent correlates one event from 4 goroutines:
// the counts handed out are exactly 1 to 2000, each once, and every
// patch carries its own count, though the result is built after the lock
// is released. Run it with -race.
func TestEventCorrelatorConcurrent(t *testing.T) {
	const goroutines, each = 4, 500
	c := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: testclocks.NewFakeClock(t0), BurstSize: 1 << 30})
	e := fuzzEvent("kubelet", "node-1", "web-0", "", "BackOff", "back-off")
	counts := make(chan int32, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				r, err := c.EventCorrelate(e)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Event.Count > 1 && !strings.HasPrefix(string(r.Patch), fmt.Sprintf(`{"count":%d,`, r.Event.Count)) {
					t.Errorf("count %d with patch %s", r.Event.Count, r.Patch)
				}
				counts <- r.Event.Count
			}
		})
	}
	wg.Wait()
	close(counts)
	seen := make([]bool, goroutines*each+1)
	for n := range counts {
		if n < 1 || int(n) >= len(seen) || seen[n] {
			t.Fatalf("count %d handed out twice or out of range", n)
		}
		seen[n] = true
	}
}

// TestEventCorrelateIntervalClock uses client-go's own test clock, which
// advances on every reading: herald must read the clock as often, and in
// the same order, as client-go does.
func TestEventCorrelateIntervalClock(t *testing.T) {
	anchor := record.NewEventCorrelator(&testclocks.SimpleIntervalClock{Time: t0, Duration: time.Second})
	herald := k8sadapter.NewEventCorrelator(&testclocks.SimpleIntervalClock{Time: t0, Duration: time.Second})
	g := newGen(1, 600*time.Second, 10, nil)
	g.step = 2 * time.Second // client-go reads the clock twice per event
	for i := range 2000 {
		_, e := g.next()
		want, _ := anchor.EventCorrelate(e.DeepCopy())
		got, _ := herald.EventCorrelate(e.DeepCopy())
		sameResult(t, i, e, want, got)
	}
}

// sameResult fails the test unless herald decided for e what client-go did.
func sameResult(t *testing.T, i int, e *v1.Event, want *record.EventCorrelateResult, got *k8sadapter.EventCorrelateResult) {
	t.Helper()
	if want.Skip != got.Skip {
		t.Fatalf("event %d %s/%s %q: Skip = %v, client-go %v", i, e.InvolvedObject.Name, e.Reason, e.Message, got.Skip, want.Skip)
	}
	if diff := cmp.Diff(want.Event, got.Event); diff != "" {
		t.Fatalf("event %d %s/%s %q: event differs from client-go (-client-go +herald):\n%s", i, e.InvolvedObject.Name, e.Reason, e.Message, diff)
	}
	if string(want.Patch) != string(got.Patch) {
		t.Fatalf("event %d: patch %s, client-go %s", i, got.Patch, want.Patch)
	}
}

// TestPanickingSpamKeyFuncConcurrently: concurrent EventCorrelate calls
// on one correlator whose SpamKeyFunc panics each get their error, and
// the panic path reads nothing another call writes (run with -race).
func TestPanickingSpamKeyFuncConcurrently(t *testing.T) {
	c := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{
		SpamKeyFunc: func(*v1.Event) string { panic("boom") },
	})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				e := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}, Count: 1,
					InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"}, Reason: "R", Message: string(rune('a'+g)) + string(rune(i%20))}
				if _, err := c.EventCorrelate(e); err == nil {
					t.Error("no error from a panicking SpamKeyFunc")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestCountWrapWhenSkipped: an event recorded with Count -1: its second
// occurrence wraps the int32 count to 0, which client-go remembers (its
// next occurrence is new) even when the spam filter refuses that
// occurrence. herald must return what client-go returns.
func TestCountWrapWhenSkipped(t *testing.T) {
	mk := func(clk *testclocks.FakeClock, n int) *v1.Event {
		now := metav1.NewTime(clk.Now())
		return &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p." + string(rune('a'+n)), Namespace: "ns"}, Count: -1,
			FirstTimestamp: now, LastTimestamp: now,
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"}, Reason: "R", Message: "m",
			Source: v1.EventSource{Component: "c"}}
	}
	opts := func(clk *testclocks.FakeClock) record.CorrelatorOptions {
		return record.CorrelatorOptions{Clock: clk, BurstSize: 1, QPS: 1}
	}
	cclk, hclk := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
	cg := record.NewEventCorrelatorWithOptions(opts(cclk))
	h := k8sadapter.NewEventCorrelatorWithOptions(opts(hclk))
	for i := range 3 {
		want, werr := cg.EventCorrelate(mk(cclk, i))
		got, gerr := h.EventCorrelate(mk(hclk, i))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("event %d: errors %v, %v", i, werr, gerr)
		}
		type res struct {
			Event *v1.Event
			Patch string
			Skip  bool
		}
		if diff := cmp.Diff(res{want.Event, string(want.Patch), want.Skip}, res{got.Event, string(got.Patch), got.Skip}); diff != "" {
			t.Errorf("event %d (-client-go +herald):\n%s", i, diff)
		}
		if i == 1 {
			cclk.Step(2 * time.Second)
			hclk.Step(2 * time.Second)
		}
	}
}

// TestFoldedPanicPathNamesEachOccurrence: a MessageFunc that panics
// (folding stays on: only KeyFunc and SpamKeyFunc turn it off), MaxEvents
// 1 so that every event is combined and so reaches it: every event,
// folded ones included, must be stored as the recorder built it, with its
// own generated name.
func TestFoldedPanicPathNamesEachOccurrence(t *testing.T) {
	clk := testclocks.NewFakeClock(t0)
	client := trackerClientset()
	sink := newHeldSink(client, true)
	e := newBroadcaster(t, k8sadapter.WithClock(clk), k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{
		Clock: clk, MaxEvents: 1, MessageFunc: func(*v1.Event) string { panic("boom") },
	}))
	e.StartRecordingToSink(sink)
	r := recorder(e)
	r.Event(pod("held"), v1.EventTypeNormal, "Held", "held")
	<-sink.held
	var want []string
	for range 5 {
		clk.Step(time.Second)
		r.Event(pod("crash"), v1.EventTypeWarning, "BackOff", "back-off")
		want = append(want, fmt.Sprintf("crash.%x", clk.Now().UnixNano()))
	}
	close(sink.release)
	join(t, e)
	var got []string
	for _, s := range storedEventsOf(t, client) {
		if s.InvolvedObject.Name == "crash" {
			got = append(got, s.Name)
			if s.Count != 1 || !s.FirstTimestamp.Equal(&s.LastTimestamp) || s.Name != fmt.Sprintf("crash.%x", s.FirstTimestamp.UnixNano()) {
				t.Errorf("stored %s count %d first %v last %v", s.Name, s.Count, s.FirstTimestamp, s.LastTimestamp)
			}
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored names (-want +got):\n%s", diff)
	}
	if st := e.Stats(); st.Folded == 0 {
		t.Errorf("nothing folded: %+v", st)
	}
}

// storedEventsOf lists the events c stores.
func storedEventsOf(t *testing.T, c interface {
	CoreV1() typedcorev1.CoreV1Interface
}) []v1.Event {
	l, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// TestSpamKeyFuncSeesEventBeforeCount is the documented difference: a
// SpamKeyFunc is given the event before it is counted (the repeat as
// given, the combined event unnamed), where client-go gives it the copy
// it returns, named and counted after the first.
func TestSpamKeyFuncSeesEventBeforeCount(t *testing.T) {
	type seen struct {
		Name  string
		Count int32
	}
	var got, cgGot []seen
	spam := func(into *[]seen) func(*v1.Event) string {
		return func(e *v1.Event) string {
			*into = append(*into, seen{e.Name, e.Count})
			return e.Source.Component + "/" + e.InvolvedObject.Name
		}
	}
	hc, cc := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
	h := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: hc, MaxEvents: 2, SpamKeyFunc: spam(&got)})
	cg := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: cc, MaxEvents: 2, SpamKeyFunc: spam(&cgGot)})
	for i, msg := range []string{"a", "a", "b"} {
		hc.Step(time.Second)
		cc.Step(time.Second)
		e := edgeEvent(msg, hc.Now())
		e.Name = fmt.Sprint("given-", i)
		if _, err := h.EventCorrelate(e.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if _, err := cg.EventCorrelate(e.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	// The third event, "b", fills the group of two: it is combined.
	want := []seen{{"given-0", 1}, {"given-1", 1}, {"", 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("herald's SpamKeyFunc saw (-want +got):\n%s", diff)
	}
	// client-go's sees the repeat named and counted as the first's
	// second occurrence, and the combined event named.
	if len(cgGot) != 3 || cgGot[1] != (seen{"given-0", 2}) || cgGot[2].Name == "" {
		t.Errorf("client-go's SpamKeyFunc saw %+v; the difference documented is gone", cgGot)
	}
}

// TestUserFunctionWritesOnlyItsSinksCopy: a CorrelatorOptions function
// that writes the event it is given writes the sink's own copy, as in
// client-go, whose sinks each correlate a copy of the event: two sinks
// store what one would, and a handler sees the event as recorded.
func TestUserFunctionWritesOnlyItsSinksCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts record.CorrelatorOptions
		want string // the message each sink stores
	}{
		{"MessageFunc", record.CorrelatorOptions{MaxEvents: 1, MessageFunc: func(e *v1.Event) string {
			e.Message += "!"
			return "combined: " + e.Message
		}}, "combined: msg!"},
		{"KeyFunc", record.CorrelatorOptions{KeyFunc: func(e *v1.Event) (string, string) {
			e.Message += "?"
			return record.EventAggregatorByReasonFunc(e)
		}}, "msg?"},
		{"SpamKeyFunc", record.CorrelatorOptions{SpamKeyFunc: func(e *v1.Event) string {
			e.Message += "#"
			return e.Source.Component + e.InvolvedObject.Name
		}}, "msg#"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclocks.NewFakeClock(t0)
			tc.opts.Clock = clk
			e := newBroadcaster(t, k8sadapter.WithClock(clk), k8sadapter.WithCorrelatorOptions(tc.opts))
			var mu sync.Mutex
			var seen []string
			e.StartEventWatcher(func(ev *v1.Event) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, ev.Message)
			})
			clients := []*fake.Clientset{trackerClientset(), trackerClientset()}
			for _, c := range clients {
				e.StartRecordingToSink(newHeldSink(c, false))
			}
			recorder(e).Event(pod("p"), v1.EventTypeWarning, "BackOff", "msg")
			if err := e.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, c := range clients {
				var got []string
				for _, s := range storedEventsOf(t, c) {
					got = append(got, s.Message)
				}
				if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
					t.Errorf("sink %d stored (-want +got):\n%s", i, diff)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{"msg"}, seen); diff != "" {
				t.Errorf("the handler saw (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFoldedMessageFuncSeesName: a MessageFunc that reads the
// event's name (folding stays on with a MessageFunc). client-go's
// aggregator hands it the event as the recorder built it, named
// "<object>.<hex nanos>"; the stored combined events must carry the
// messages client-go's correlator computes for the same events.
func TestFoldedMessageFuncSeesName(t *testing.T) {
	msgFunc := func(e *v1.Event) string { return "combined from " + e.Name }
	clk := testclocks.NewFakeClock(t0)
	client := trackerClientset()
	sink := newHeldSink(client, true)
	e := newBroadcaster(t, k8sadapter.WithClock(clk), k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{
		Clock: clk, MaxEvents: 1, MessageFunc: msgFunc,
	}))
	e.StartRecordingToSink(sink)
	r := recorder(e)
	r.Event(pod("held"), v1.EventTypeNormal, "Held", "held")
	<-sink.held

	// client-go's correlator, fed the events its recorder builds.
	cclk := testclocks.NewFakeClock(t0)
	cg := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: cclk, MaxEvents: 1, MessageFunc: msgFunc})
	var want []string
	for range 4 {
		clk.Step(time.Second)
		cclk.Step(time.Second)
		r.Event(pod("crash"), v1.EventTypeWarning, "BackOff", "back-off")
		now := metav1.NewTime(clk.Now())
		ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crash.%x", now.UnixNano()), Namespace: "baz"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "crash", Namespace: "baz", UID: "uid-crash", APIVersion: "v1"},
			Reason:         "BackOff", Message: "back-off", Type: v1.EventTypeWarning, Count: 1,
			FirstTimestamp: now, LastTimestamp: now, Source: v1.EventSource{Component: "eventTest", Host: "node-1"}}
		res, err := cg.EventCorrelate(ev)
		if err != nil || res.Skip {
			t.Fatal(err)
		}
		want = append(want, res.Event.Message)
	}
	close(sink.release)
	join(t, e)
	// client-go patches one combined event: the message stored is the last one.
	want = want[len(want)-1:]
	var got []string
	for _, s := range storedEventsOf(t, client) {
		if s.InvolvedObject.Name == "crash" {
			got = append(got, s.Message)
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored messages (-client-go +herald):\n%s", diff)
	}
}

// TestNegativeQPS: client-go passes a negative QPS to x/time/rate,
// which then never refills: after BurstSize events a bucket refuses every
// event. herald promises that out-of-range numbers behave as in client-go
// (only negative LRUCacheSize and BurstSize are documented otherwise).
func TestNegativeQPS(t *testing.T) {
	cc, hc := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
	cg := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: cc, QPS: -1, BurstSize: 2})
	h := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: hc, QPS: -1, BurstSize: 2})
	for i := range 4 {
		now := metav1.NewTime(cc.Now())
		e := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p.%x", now.UnixNano()), Namespace: "ns"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"}, Reason: "R", Message: "m",
			Count: 1, FirstTimestamp: now, LastTimestamp: now, Source: v1.EventSource{Component: "c"}}
		want, _ := cg.EventCorrelate(e.DeepCopy())
		got, _ := h.EventCorrelate(e.DeepCopy())
		sameResult(t, i, e, want, got)
		cc.Step(time.Hour)
		hc.Step(time.Hour)
	}
}

// TestMessageFuncArgumentStays: client-go hands each
// CorrelatorOptions function a copy of the event of its own
// (recordToSink's eventCopy), never changed afterwards. A MessageFunc
// that keeps the pointer (to log later, to collect in a test) must find
// the event it was given, not the next folded occurrence.
func TestMessageFuncArgumentStays(t *testing.T) {
	var seen []*v1.Event
	var stamps []metav1.Time
	clk := testclocks.NewFakeClock(t0)
	client := trackerClientset()
	sink := newHeldSink(client, true)
	e := newBroadcaster(t, k8sadapter.WithClock(clk), k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{
		Clock: clk, MaxEvents: 1, MessageFunc: func(ev *v1.Event) string {
			seen = append(seen, ev)
			stamps = append(stamps, ev.FirstTimestamp)
			return "combined"
		},
	}))
	e.StartRecordingToSink(sink)
	r := recorder(e)
	r.Event(pod("held"), v1.EventTypeNormal, "Held", "held")
	<-sink.held
	for range 4 {
		clk.Step(time.Second)
		r.Event(pod("crash"), v1.EventTypeWarning, "BackOff", "back-off")
	}
	close(sink.release)
	join(t, e)
	for i, ev := range seen {
		if !ev.FirstTimestamp.Equal(&stamps[i]) {
			t.Errorf("MessageFunc call %d: its event now reads first timestamp %v, was %v", i, ev.FirstTimestamp, stamps[i])
		}
	}
}

// TestRandomDifferentialOptionEdges feeds client-go's correlator and
// herald's the same random events (counts at the int32 edges, messages
// that need escaping or are not UTF-8, names that are not DNS names, zero
// and far timestamps, a clock that steps back), with random server
// answers fed back and the caller scribbling on every result, under
// option sets at and past their ranges: every result must be the same.
func TestRandomDifferentialOptionEdges(t *testing.T) {
	optsets := []record.CorrelatorOptions{
		{},
		{LRUCacheSize: 1},
		{LRUCacheSize: 2, BurstSize: 1, QPS: 1},
		{MaxEvents: 1},
		{MaxEvents: -1},
		{MaxEvents: 1, MaxIntervalInSeconds: -1},
		{MaxEvents: 1, MaxIntervalInSeconds: 1},
		{MaxEvents: 1, MaxIntervalInSeconds: math.MaxInt},
		{MaxEvents: 1, MaxIntervalInSeconds: -(1 << 40), BurstSize: 1, QPS: 0.1},
		{MaxEvents: math.MinInt, LRUCacheSize: 1},
		{MaxEvents: 1, KeyFunc: func(e *v1.Event) (string, string) { return "", e.Message }, SpamKeyFunc: func(*v1.Event) string { return "" }, BurstSize: 3, QPS: 0.5},
		{KeyFunc: func(e *v1.Event) (string, string) { return e.Name, "" }, LRUCacheSize: 2},
		{QPS: float32(math.Inf(1)), BurstSize: 1},
		{QPS: float32(math.NaN()), BurstSize: 2},
		{QPS: 1e-30, BurstSize: 2},
		{QPS: -1, BurstSize: 2},
		{BurstSize: 1, QPS: 0.5, LRUCacheSize: 3, MaxEvents: 1},
		{MaxIntervalInSeconds: 1 << 40, MaxEvents: 1},
		{MaxEvents: 1, MessageFunc: func(e *v1.Event) string { return e.Name + "/" + e.Message }},
	}
	counts := []int32{1, 1, 1, 0, -1, 2, math.MaxInt32, math.MinInt32}
	msgs := []string{"m", "", "<&>", "\xff", "a\u2028b"}
	objs := []string{"a", "b", "Bad_Name"}
	times := []metav1.Time{{}, metav1.NewTime(time.Unix(0, 5)), metav1.NewTime(time.Unix(1<<40, 0))}
	for oi, o := range optsets {
		t.Run(fmt.Sprint(oi), func(t *testing.T) {
			for seed := range 4 {
				rnd := rand.New(rand.NewPCG(uint64(seed), uint64(oi)))
				cc, hc := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
				co, ho := o, o
				co.Clock, ho.Clock = cc, hc
				cg := record.NewEventCorrelatorWithOptions(co)
				h := k8sadapter.NewEventCorrelatorWithOptions(ho)
				for i := range 300 {
					now := metav1.NewTime(cc.Now())
					obj := objs[rnd.IntN(len(objs))]
					e := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", obj, now.UnixNano()), Namespace: "ns"},
						InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: obj, Namespace: "ns"},
						Reason:         "R", Message: msgs[rnd.IntN(len(msgs))], Type: "Normal", Count: counts[rnd.IntN(len(counts))],
						FirstTimestamp: now, LastTimestamp: now, Source: v1.EventSource{Component: "c"}}
					if rnd.IntN(10) == 0 {
						e.LastTimestamp = times[rnd.IntN(len(times))]
					}
					if rnd.IntN(10) == 0 {
						e.FirstTimestamp = times[rnd.IntN(len(times))]
					}
					want, werr := cg.EventCorrelate(e.DeepCopy())
					got, gerr := h.EventCorrelate(e.DeepCopy())
					if (werr == nil) != (gerr == nil) {
						t.Fatalf("seed %d event %d: err %v vs %v", seed, i, werr, gerr)
					}
					sameResult(t, i, e, want, got)
					if !want.Skip && rnd.IntN(2) == 0 {
						// The server answers.
						a := want.Event.DeepCopy()
						a.ResourceVersion = fmt.Sprint(i)
						if rnd.IntN(5) == 0 {
							a.Count = counts[rnd.IntN(len(counts))]
						}
						if rnd.IntN(5) == 0 {
							a.Name = "renamed"
						}
						cg.UpdateState(a.DeepCopy())
						h.UpdateState(a.DeepCopy())
					}
					// The caller scribbles on what it got.
					if got.Event != nil {
						got.Event.Name, got.Event.Count, got.Event.Message = "x", 99, "scribble"
						got.Event.InvolvedObject.Name = "zz"
					}
					for i := range got.Patch {
						got.Patch[i] = 'X'
					}
					d := time.Duration(rnd.IntN(4)) * time.Second
					if rnd.IntN(20) == 0 {
						d = time.Duration(rnd.IntN(900)) * time.Second
					}
					if rnd.IntN(15) == 0 {
						d = -d
					}
					cc.Step(d)
					hc.Step(d)
				}
			}
		})
	}
}

// TestRealisticRepeatAllocatesOnce: on realistic events (a FieldPath, a
// host, the reporting fields, a message of about 50 bytes) a repeat, and
// a repeat of a combined event, allocate their result only: one
// allocation, the event's copy and its patch together.
func TestRealisticRepeatAllocatesOnce(t *testing.T) {
	tests := []struct {
		name string
		msg  func(i int) string // the message of the i-th of 100 events about one object each, or all about one
		obj  func(i int) string
	}{
		{"repeat", func(i int) string { return fmt.Sprintf(realisticMessage, fmt.Sprint("web-", i)) }, func(i int) string { return fmt.Sprint("web-", i) }},
		{"aggregate", func(i int) string { return fmt.Sprintf(realisticMessage, fmt.Sprint("web-0-", i)) }, func(int) string { return "web-0" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := realisticOptions
			o.Clock = testclocks.NewFakeClock(t0)
			c := k8sadapter.NewEventCorrelatorWithOptions(o)
			es := make([]*v1.Event, 100)
			for i := range es {
				es[i] = realisticEvent(tc.obj(i), tc.msg(i))
			}
			for range 2 { // every key known, every group full
				for _, e := range es {
					if _, err := c.EventCorrelate(e); err != nil {
						t.Fatal(err)
					}
				}
			}
			i := 0
			got := testing.AllocsPerRun(len(es)-1, func() {
				r, err := c.EventCorrelate(es[i%len(es)])
				if err != nil || r.Skip || r.Event.Count < 2 {
					t.Fatalf("EventCorrelate = %+v, %v; want a recorded repeat", r, err)
				}
				i++
			})
			if got > 1 {
				t.Errorf("%s: %v allocations, want 1", tc.name, got)
			}
		})
	}
}
