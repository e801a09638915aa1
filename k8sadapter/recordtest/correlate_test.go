package recordtest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// call is one call to a recorder in the differential test.
type call struct {
	gap              time.Duration // the clock steps this much before the call
	ref              *v1.ObjectReference
	typ, reason, msg string
	annotations      map[string]string
}

// callGen produces calls that make repeats, spam and combined events
// happen. It never repeats a message of a group that has been combined
// within its window: client-go then forgets a random member of the group
// (herald the least recently seen), and what follows is client-go's
// choice.
type callGen struct {
	rng     *rand.Rand
	window  time.Duration
	max     int
	now     time.Time
	n       int
	groups  map[string]*callGroup
	objects []*v1.ObjectReference
}

type callGroup struct {
	last     time.Time
	members  map[string]bool
	combined bool
}

func newCallGen(seed uint64, window time.Duration, max int) *callGen {
	return &callGen{
		rng: rand.New(rand.NewPCG(seed, 3)), window: window, max: max, now: t0, groups: map[string]*callGroup{},
		objects: []*v1.ObjectReference{
			{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-0", UID: "u0"},
			{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-1", UID: "u1", FieldPath: "spec.containers{app}"},
			{Kind: "Node", APIVersion: "v1", Name: "node-1", UID: "u2"},
		},
	}
}

// The gaps between calls: mostly a second (each call at an instant of its
// own: client-go names events by their time), sometimes around the spam
// filter's refill and the aggregation window.
var gaps = []time.Duration{2 * time.Second, 30 * time.Second,
	299 * time.Second, 301 * time.Second, 599 * time.Second, 601 * time.Second, time.Hour}

func (g *callGen) next() call {
	c := call{gap: time.Second, typ: v1.EventTypeWarning, reason: "BackOff"}
	if g.rng.IntN(8) == 0 {
		c.gap = gaps[g.rng.IntN(len(gaps))]
	}
	g.now = g.now.Add(c.gap)
	g.n++
	c.ref = g.objects[0] // mostly one busy object: spam and groups
	if g.rng.IntN(5) < 2 {
		c.ref = g.objects[g.rng.IntN(len(g.objects))]
		c.typ = []string{v1.EventTypeNormal, v1.EventTypeWarning}[g.rng.IntN(2)]
		c.reason = []string{"BackOff", "Pulling"}[g.rng.IntN(2)]
	}
	c.msg = fmt.Sprintf("message %d", g.rng.IntN(g.max+4))
	if g.rng.IntN(6) == 0 {
		c.annotations = map[string]string{"attempt": fmt.Sprint(g.n)}
	}
	key := fmt.Sprint(c.ref.Kind, c.ref.Namespace, c.ref.Name, c.typ, c.reason)
	grp := g.groups[key]
	if grp == nil || g.now.Sub(grp.last) > g.window {
		grp = &callGroup{members: map[string]bool{}}
		g.groups[key] = grp
	}
	if grp.combined && grp.members[c.msg] {
		c.msg = fmt.Sprintf("fresh message %d", g.n)
	}
	grp.members[c.msg], grp.last = true, g.now
	grp.combined = grp.combined || len(grp.members) >= g.max
	return c
}

// clientGo is client-go's side: its EventCorrelator and its sink's write
// path (tools/record's recordToSink and recordEvent: skip, patch a repeat,
// create a first occurrence or what a patch did not find, feed back what
// was stored) into a map that stands for the apiserver: a create stores
// the event, a patch applies the strategic-merge patch to the stored
// event as the apiserver does, or is not found.
type clientGo struct {
	c       *record.EventCorrelator
	stored  map[string]*v1.Event // by namespace/name
	n       int                  // makes names unique (client-go's come from the time)
	skipped int
}

func newClientGo(o record.CorrelatorOptions) *clientGo {
	return &clientGo{c: record.NewEventCorrelatorWithOptions(o), stored: map[string]*v1.Event{}}
}

// record builds the event client-go's recorder builds for c at now, and
// writes what its correlator decides.
func (g *clientGo) record(t *testing.T, c call, now time.Time) {
	g.n++
	ns := c.ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	e := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", c.ref.Name, now.UnixNano()+int64(g.n)), Namespace: ns, Annotations: c.annotations},
		InvolvedObject: *c.ref, Reason: c.reason, Message: c.msg, Type: c.typ,
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
	}
	res, err := g.c.EventCorrelate(e)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skip {
		g.skipped++
		return
	}
	stored := g.patch(t, res.Event, res.Patch)
	if stored == nil { // a first occurrence, or the patched event is not stored
		ev := *res.Event
		ev.ResourceVersion = ""
		key := ev.Namespace + "/" + ev.Name
		if g.stored[key] != nil {
			t.Fatalf("client-go's sink: event %s already exists", key)
		}
		stored = &ev
		g.stored[key] = stored
	}
	g.c.UpdateState(stored.DeepCopy())
}

// patch applies the patch of e, a repeat, to the event stored under e's
// name, and returns it; nil if e is no repeat or nothing is stored.
func (g *clientGo) patch(t *testing.T, e *v1.Event, patch []byte) *v1.Event {
	old := g.stored[e.Namespace+"/"+e.Name]
	if e.Count <= 1 || old == nil {
		return nil
	}
	js, err := json.Marshal(old)
	if err == nil {
		js, err = strategicpatch.StrategicMergePatch(js, patch, v1.Event{})
	}
	var out v1.Event
	if err == nil {
		err = json.Unmarshal(js, &out)
	}
	if err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	*old = out
	return old
}

// events returns what the apiserver stored, as Events.
func (g *clientGo) events() []recordtest.Event {
	var out []recordtest.Event
	for _, e := range g.stored {
		out = append(out, recordtest.Event{
			Object: e.InvolvedObject, Type: e.Type, Reason: e.Reason, Message: e.Message, Annotations: e.Annotations,
			FirstTime: e.FirstTimestamp.Time, Time: e.LastTimestamp.Time, Count: e.Count,
		})
	}
	return out
}

// sorted sorts events by their fields, for a comparison that does not
// depend on the order the apiserver lists them in.
func sorted(events []recordtest.Event) []recordtest.Event {
	key := func(e recordtest.Event) string {
		return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d|%d", e.Object.Name, e.Object.FieldPath, e.Type, e.Reason, e.Message,
			e.FirstTime.UTC().Format(time.RFC3339Nano), e.Time.UnixNano(), e.Count)
	}
	sort.Slice(events, func(i, j int) bool { return key(events[i]) < key(events[j]) })
	return events
}

// TestCorrelateMatchesClientGo records the same calls, on identical fake
// clocks, through a correlated Recorder and through client-go's
// EventCorrelator and sink into a stand-in apiserver, and requires the events
// kept to be the events stored, field for field (the times compared in
// UTC), and the calls skipped as many.
func TestCorrelateMatchesClientGo(t *testing.T) {
	variants := []struct {
		name string
		opts record.CorrelatorOptions
	}{
		{"defaults", record.CorrelatorOptions{}},
		{"small", record.CorrelatorOptions{LRUCacheSize: 7, BurstSize: 3, QPS: 1. / 30, MaxEvents: 4, MaxIntervalInSeconds: 60}},
	}
	const seeds = 6
	var total compared
	for _, v := range variants {
		for seed := range uint64(seeds) {
			t.Run(fmt.Sprintf("%s/seed=%d", v.name, seed), func(t *testing.T) {
				total.add(compareWithClientGo(t, v.opts, seed, 400))
			})
		}
	}
	t.Logf("%+v", total)
	// The comparison means something only if every path was taken often.
	if total.skipped < total.calls/20 || total.folded < total.kept/10 || total.combined < seeds*len(variants) {
		t.Errorf("calls too tame: %+v", total)
	}
}

// compared counts what a comparison saw.
type compared struct{ calls, skipped, kept, folded, combined int }

func (c *compared) add(d compared) {
	c.calls, c.skipped, c.kept, c.folded, c.combined = c.calls+d.calls, c.skipped+d.skipped, c.kept+d.kept, c.folded+d.folded, c.combined+d.combined
}

// compareWithClientGo runs n calls of one seed through both, compares, and
// counts what it saw.
func compareWithClientGo(t *testing.T, o record.CorrelatorOptions, seed uint64, n int) compared {
	kitClock, anchorClock := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	kit := recordtest.New(recordtest.Options{Correlate: true, Clock: kitClock, CorrelatorOptions: o})
	ao := o
	ao.Clock = anchorClock
	anchor := newClientGo(ao)
	window, max := time.Duration(o.MaxIntervalInSeconds)*time.Second, o.MaxEvents
	if window == 0 {
		window, max = 600*time.Second, 10
	}
	g := newCallGen(seed, window, max)
	for range n {
		c := g.next()
		kitClock.Step(c.gap)
		anchorClock.Step(c.gap)
		kit.AnnotatedEventf(c.ref, c.annotations, c.typ, c.reason, "%s", c.msg)
		anchor.record(t, c, anchorClock.Now())
	}
	got, want := kit.Events(), anchor.events()
	if d := cmp.Diff(sorted(want), sorted(got)); d != "" {
		t.Errorf("events kept differ from those client-go stores (-client-go +kit):\n%s", d)
	}
	if kit.Skipped() != anchor.skipped {
		t.Errorf("Skipped() = %d, client-go skipped %d", kit.Skipped(), anchor.skipped)
	}
	c := compared{calls: n, skipped: kit.Skipped(), kept: len(got)}
	for _, e := range got {
		if e.Count > 1 {
			c.folded++
		}
		if strings.HasPrefix(e.Message, "(combined from similar events): ") {
			c.combined++
		}
	}
	return c
}
