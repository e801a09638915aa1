package natsbridge_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestPoolDeadLettersInTopic: a handle.Pool reads a durable watcher whose
// dead letters go to a topic. A poison message and a value whose handler
// fails for good are stored there (bytes, headers, error, attempts) before
// they are acknowledged; the rest is handled in each key's order; every
// value is acknowledged. Redrive publishes the dead letters back, each
// once, and a second Redrive finds none.
func TestPoolDeadLettersInTopic(t *testing.T) {
	s := startServer(t, embedded.Options{})
	nc, js := connect(t, s)
	topic := newTopic(t, js, "pool.orders", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "pool.orders.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "ship", DeadLetters: dlq})
	publishAll(t, topic, 1, 10)
	if err := nc.Publish("pool.orders", []byte("not json")); err != nil { // seq 11: poison
		t.Fatal(err)
	}
	publishAll(t, topic, 12, 20)
	var mu sync.Mutex
	order := map[string][]int{}
	p := handle.New(w, func(o Order) string { return o.Item }, func(ctx context.Context, o Order) error {
		if o.ID == 5 {
			return handle.Permanent(errors.New("no such address"))
		}
		mu.Lock()
		order[o.Item] = append(order[o.Item], o.ID)
		mu.Unlock()
		return nil
	}, handle.Options{Workers: 4, Logger: quiet})
	eventually(t, "every value has its fate", func() bool {
		st := p.Stats()
		return st.Received == 20 && st.Handled+st.DeadLettered == 20
	})
	st := p.Stats()
	if st.DeadLettered != 2 || st.Poisoned != 1 || st.Handled != 18 {
		t.Errorf("Stats %+v, want 18 handled, 2 dead-lettered (1 poisoned)", st)
	}
	if ids := order[""]; !slices.IsSorted(ids) {
		t.Errorf("handled out of order: %v", ids)
	}
	eventually(t, "every value acknowledged", func() bool { return w.Stats().Acked == 20 })
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	dw := watchTopic(t, dlq, natsbridge.WatchOptions{From: 1})
	var dead []natsbridge.DeadLetter
	for range 2 {
		d, err := dw.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, d)
	}
	slices.SortFunc(dead, func(a, b natsbridge.DeadLetter) int { return int(a.Seq) - int(b.Seq) })
	if d := dead[0]; d.Topic != "pool.orders" || d.Seq != 5 || d.Attempts != 1 || d.Error != "no such address" || len(d.Data) == 0 || d.First.IsZero() {
		t.Errorf("dead letter of 5: %+v", d)
	}
	if d := dead[1]; d.Seq != 11 || string(d.Data) != "not json" || d.Attempts != 0 || d.Error == "" {
		t.Errorf("dead letter of the poison message: %+v", d)
	}
	back := watch(t, topic, natsbridge.WatchOptions{})
	rs, err := natsbridge.Redrive(testCtx(t), dlq, func(d natsbridge.DeadLetter) bool { return d.Seq == 11 })
	if err != nil || rs.Redriven != 1 || rs.Kept != 1 {
		t.Fatalf("Redrive = %+v, %v; want 1 redriven, the poison kept", rs, err)
	}
	if got := take(t, back, 1); got[0].ID != 5 || back.Seq() != 21 {
		t.Errorf("redriven: %v at %d, want value 5 at the end of the topic (21)", got, back.Seq())
	}
	rs, err = natsbridge.Redrive(testCtx(t), dlq, func(natsbridge.DeadLetter) bool { return true })
	if err != nil || rs.Redriven != 0 || rs.Kept != 1 {
		t.Errorf("second Redrive = %+v, %v; want nothing redriven again, the poison still kept", rs, err)
	}
}
