package natsbridge_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

func TestNewTopicNames(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	tests := []struct {
		name  string
		topic string
		valid bool
	}{
		{"plain", "orders", true},
		{"dotted", "shop.orders.eu-1", true},
		{"underscore", "job_events", true},
		{"empty", "", false},
		{"empty token", "shop..orders", false},
		{"leading dot", ".orders", false},
		{"trailing dot", "orders.", false},
		{"star wildcard", "shop.*", false},
		{"tail wildcard", "shop.>", false},
		{"star inside a token", "or*ders", false},
		{"space", "shop orders", false},
		{"tab", "shop\torders", false},
		{"newline", "orders\n", false},
		{"non-ASCII", "bestellungen-ü", false},
		{"slash", "shop/orders", false},
		{"dollar", "$JS.API", false},
		{"too long", strings.Repeat("a", 201), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topic, err := natsbridge.NewTopic(context.Background(), js, tc.topic, natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
			if tc.valid {
				if err != nil {
					t.Fatalf("NewTopic(%q) = %v, want no error", tc.topic, err)
				}
				if err := topic.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, natsbridge.ErrInvalidName) {
				t.Fatalf("NewTopic(%q) = %v, want ErrInvalidName", tc.topic, err)
			}
		})
	}
}

func TestNewTopicBadArguments(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := context.Background()
	tests := []struct {
		name string
		js   jetstream.JetStream
		c    natsbridge.Codec[Order]
		o    natsbridge.TopicOptions
	}{
		{"nil JetStream", nil, natsbridge.JSON[Order](), natsbridge.TopicOptions{}},
		{"nil codec", js, nil, natsbridge.TopicOptions{}},
		{"negative MaxAge", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{MaxAge: -1}},
		{"negative MaxMsgs", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{MaxMsgs: -1}},
		{"negative MaxBytes", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{MaxBytes: -1}},
		{"heartbeat too short", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{Heartbeat: time.Millisecond}},
		{"unknown storage", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{Storage: 7}},
		{"ReadAhead above MaxReadAhead", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{ReadAhead: natsbridge.MaxReadAhead + 1}},
		{"huge ReadAhead", js, natsbridge.JSON[Order](), natsbridge.TopicOptions{ReadAhead: 1 << 50}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := natsbridge.NewTopic(ctx, tc.js, "orders", tc.c, tc.o); err == nil {
				t.Fatal("NewTopic succeeded, want an error")
			}
		})
	}
}

// TestNewTopicIdempotent opens one topic twice, as two processes would: the
// second call finds the stream and applies its own options to it.
func TestNewTopicIdempotent(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	first := newTopic(t, js, "shop.orders", natsbridge.TopicOptions{MaxMsgs: 100})
	publishAll(t, first, 1, 3)
	second := newTopic(t, js, "shop.orders", natsbridge.TopicOptions{MaxMsgs: 50, MaxAge: time.Hour})
	if first.Stream() != "shop_orders" || second.Stream() != "shop_orders" {
		t.Fatalf("streams %q and %q, want shop_orders", first.Stream(), second.Stream())
	}
	st, err := js.Stream(context.Background(), "shop_orders")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxMsgs != 50 || cfg.MaxAge != time.Hour {
		t.Errorf("stream MaxMsgs %d, MaxAge %v; want 50, 1h (the last NewTopic's options)", cfg.MaxMsgs, cfg.MaxAge)
	}
	if n := st.CachedInfo().State.Msgs; n != 3 {
		t.Errorf("stream holds %d messages after the second NewTopic, want 3", n)
	}
}

func TestNewTopicTypeMismatch(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	newTopic(t, js, "billing", natsbridge.TopicOptions{})
	_, err := natsbridge.NewTopic(context.Background(), js, "billing", natsbridge.JSON[Invoice](), natsbridge.TopicOptions{})
	if !errors.Is(err, natsbridge.ErrTypeMismatch) {
		t.Fatalf("NewTopic[Invoice] on a stream of Orders = %v, want ErrTypeMismatch", err)
	}
	if !strings.Contains(err.Error(), "natsbridge_test.Order") || !strings.Contains(err.Error(), "natsbridge_test.Invoice") {
		t.Errorf("error %q does not name both types", err)
	}
	// The same type with the same options is not a mismatch.
	if _, err := natsbridge.NewTopic(context.Background(), js, "billing", natsbridge.JSON[Order](), natsbridge.TopicOptions{}); err != nil {
		t.Fatalf("NewTopic[Order] again: %v", err)
	}
}

func TestNewTopicNameConflict(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := context.Background()
	newTopic(t, js, "a.b", natsbridge.TopicOptions{})
	// "a_b" maps to the same stream name as "a.b".
	if _, err := natsbridge.NewTopic(ctx, js, "a_b", natsbridge.JSON[Order](), natsbridge.TopicOptions{}); !errors.Is(err, natsbridge.ErrNameConflict) {
		t.Fatalf("NewTopic(a_b) after a.b = %v, want ErrNameConflict", err)
	}
	// A stream herald did not make, under the topic's name.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "audit", Subjects: []string{"audit.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := natsbridge.NewTopic(ctx, js, "audit", natsbridge.JSON[Order](), natsbridge.TopicOptions{}); !errors.Is(err, natsbridge.ErrNameConflict) {
		t.Fatalf("NewTopic(audit) over a foreign stream = %v, want ErrNameConflict", err)
	}
}

// TestNewTopicDuplicatesDefault: a zero Duplicates is the server's default
// window, shortened to MaxAge when that is shorter (a window longer than
// MaxAge would be refused), also when a second NewTopic shortens MaxAge.
func TestNewTopicDuplicatesDefault(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	tests := []struct {
		name   string
		before *natsbridge.TopicOptions // a first NewTopic, if any
		o      natsbridge.TopicOptions
		want   time.Duration
	}{
		{"no MaxAge", nil, natsbridge.TopicOptions{}, natsbridge.DefaultDuplicates},
		{"MaxAge longer", nil, natsbridge.TopicOptions{MaxAge: time.Hour}, natsbridge.DefaultDuplicates},
		{"MaxAge shorter", nil, natsbridge.TopicOptions{MaxAge: 30 * time.Second}, 30 * time.Second},
		{"MaxAge shortened by a second NewTopic", &natsbridge.TopicOptions{}, natsbridge.TopicOptions{MaxAge: 30 * time.Second}, 30 * time.Second},
		{"explicit, within MaxAge", nil, natsbridge.TopicOptions{MaxAge: 30 * time.Second, Duplicates: 10 * time.Second}, 10 * time.Second},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "dups.case" + strconv.Itoa(i)
			if tc.before != nil {
				newTopic(t, js, name, *tc.before)
			}
			topic, err := natsbridge.NewTopic(context.Background(), js, name, natsbridge.JSON[Order](), tc.o)
			if err != nil {
				t.Fatalf("NewTopic(%+v) = %v", tc.o, err)
			}
			t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
			st, err := js.Stream(context.Background(), topic.Stream())
			if err != nil {
				t.Fatal(err)
			}
			if got := st.CachedInfo().Config.Duplicates; got != tc.want {
				t.Errorf("stream Duplicates = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNewTopicRefusedChange: a second NewTopic asking for a change the
// server refuses gets the server's error, and the stream keeps its
// configuration and its values (none of the call's options is applied).
func TestNewTopicRefusedChange(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	tests := []struct {
		name string
		o    natsbridge.TopicOptions
	}{
		{"storage", natsbridge.TopicOptions{MaxMsgs: 10, Storage: jetstream.MemoryStorage}},
		{"replicas without a cluster", natsbridge.TopicOptions{MaxMsgs: 10, Replicas: 3}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "refused.case" + strconv.Itoa(i)
			publishAll(t, newTopic(t, js, name, natsbridge.TopicOptions{}), 1, 3)
			tc.o.Logger = quiet
			_, err := natsbridge.NewTopic(context.Background(), js, name, natsbridge.JSON[Order](), tc.o)
			if apiErr := (*jetstream.APIError)(nil); !errors.As(err, &apiErr) {
				t.Fatalf("NewTopic(%s) on an existing stream = %v, want the server's *jetstream.APIError", tc.name, err)
			}
			st, err := js.Stream(context.Background(), strings.ReplaceAll(name, ".", "_"))
			if err != nil {
				t.Fatal(err)
			}
			info := st.CachedInfo()
			if c := info.Config; c.Storage != jetstream.FileStorage || c.Replicas != 1 || c.MaxMsgs != -1 {
				t.Errorf("stream Storage %v, Replicas %d, MaxMsgs %d after the refused NewTopic; want File, 1, -1 (unchanged)", c.Storage, c.Replicas, c.MaxMsgs)
			}
			if info.State.Msgs != 3 {
				t.Errorf("stream holds %d values after the refused NewTopic, want 3", info.State.Msgs)
			}
		})
	}
}

// TestNilArgumentsPanicAtTheCall: a nil ctx, or a nil Broadcaster or
// Publisher given to Forward, is a programming error: it panics in the
// call, naming what was nil (nats.go dereferenced the ctx, and Forward's
// own goroutine dereferenced the Publisher, crashing the process where no
// caller could recover). Topic.Shutdown and Forward's stop panic before
// they stop anything (they stopped a watcher or the forwarding first, and
// Topic.Shutdown of a topic with nothing live returned nil).
func TestNilArgumentsPanicAtTheCall(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	closed := broadcast.New[Order](broadcast.Options{})
	if err := closed.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := topic.Publisher(natsbridge.PublisherOptions{})
	open := broadcast.New[Order](broadcast.Options{})
	stopForward := natsbridge.Forward(open, p)
	stopClosed := natsbridge.Forward(closed, p)
	var nilCtx context.Context
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"NewTopic", func() {
			_, _ = natsbridge.NewTopic(nilCtx, js, "orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
		}, "natsbridge: nil Context"},
		{"Watch", func() { _, _ = topic.Watch(nilCtx, natsbridge.WatchOptions{}) }, "natsbridge: nil Context"},
		{"Mirror", func() { _, _ = topic.Mirror(nilCtx, broadcast.Options{}) }, "natsbridge: nil Context"},
		{"Flush", func() { _ = w.Flush(nilCtx) }, "natsbridge: nil Context"},
		{"Forward from nil", func() { natsbridge.Forward(nil, p) }, "natsbridge: Forward from a nil Broadcaster"},
		{"Forward to nil", func() { natsbridge.Forward(closed, nil) }, "natsbridge: Forward to a nil Publisher"},
		{"Forward's stop", func() { _ = stopForward(nilCtx) }, "natsbridge: nil Context"},
		{"Forward's stop of a closed Broadcaster", func() { _ = stopClosed(nilCtx) }, "natsbridge: nil Context"},
		{"Next", func() { _, _ = w.Next(nilCtx) }, "natsbridge: nil Context"},
		{"Topic.Shutdown", func() { _ = topic.Shutdown(nilCtx) }, "natsbridge: nil Context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("panic %v, want %q", got, tc.want)
				}
			}()
			tc.call()
		})
	}
	// The panics came before anything was stopped: the forwarding and the
	// topic go on.
	if err := open.Publish(testCtx(t), Order{ID: 1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the value forwarded and confirmed", func() bool { return p.Stats().Confirmed == 1 })
	if err := stopForward(testCtx(t)); err != nil {
		t.Errorf("Forward's stop = %v after a nil ctx, want nil", err)
	}
	if err := open.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := p.Stats(); got.Published != 1 || got.Abandoned != 0 {
		t.Errorf("Stats() = %s, abandoned %d; want the one value forwarded", describe(got), got.Abandoned)
	}
	if _, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{}); err != nil {
		t.Errorf("Watch after Topic.Shutdown(nil) = %v, want a watcher: the topic still open", err)
	}
}
