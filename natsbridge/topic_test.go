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
	"github.com/heraldgo/herald/natsbridge/internal/shop"
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
// TestNewTopicOneOwner: the topic's owner configures its stream; another
// process that opens it with zero options takes it as it is (a watcher
// never rewrites the owner's retention), one whose options differ gets an
// error naming each difference and changes nothing, and only Update
// changes the stream.
func TestNewTopicOneOwner(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	owner := natsbridge.TopicOptions{MaxMsgs: 1000, MaxAge: time.Hour}
	first := newTopic(t, js, "shop.orders", owner)
	publishAll(t, first, 1, 3)
	config := func() jetstream.StreamConfig {
		st, err := js.Stream(context.Background(), "shop_orders")
		if err != nil {
			t.Fatal(err)
		}
		if n := st.CachedInfo().State.Msgs; n != 3 {
			t.Fatalf("stream holds %d messages, want 3", n)
		}
		return st.CachedInfo().Config
	}
	unchanged := func(when string) {
		t.Helper()
		if c := config(); c.MaxMsgs != 1000 || c.MaxAge != time.Hour {
			t.Fatalf("%s: stream MaxMsgs %d, MaxAge %v; want the owner's 1000, 1h", when, c.MaxMsgs, c.MaxAge)
		}
	}

	newTopic(t, js, "shop.orders", natsbridge.TopicOptions{}) // a watcher's process
	unchanged("after NewTopic with zero options")
	newTopic(t, js, "shop.orders", owner) // the owner again
	unchanged("after NewTopic with the same options")

	_, err := natsbridge.NewTopic(context.Background(), js, "shop.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{MaxAge: 30 * time.Minute})
	if !errors.Is(err, natsbridge.ErrConfigDiffers) {
		t.Fatalf("NewTopic with other options = %v, want ErrConfigDiffers", err)
	}
	for _, want := range []string{"MaxAge: 30m0s asked, 1h0m0s on the stream", "MaxMsgs: no limit asked, 1000 on the stream", "TopicOptions.Update"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	unchanged("after NewTopic with other options")

	newTopic(t, js, "shop.orders", natsbridge.TopicOptions{MaxAge: 30 * time.Minute, Update: true})
	if c := config(); c.MaxMsgs != -1 || c.MaxAge != 30*time.Minute {
		t.Errorf("after Update: stream MaxMsgs %d, MaxAge %v; want -1 (no limit), 30m", c.MaxMsgs, c.MaxAge)
	}
	if first.Stream() != "shop_orders" {
		t.Fatalf("stream %q, want shop_orders", first.Stream())
	}
}

// TestNewTopicSchemaByName: two services declare their own order types, in
// packages of their own; naming the schema lets them share a topic, and
// each reads the other's values. With the schema derived from the Go type,
// the other package's type is refused, and so is another codec.
func TestNewTopicSchemaByName(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	named := natsbridge.TopicOptions{Schema: "shop.Order/v1", Logger: quiet}
	mine := newTopic(t, js, "named.orders", named)
	theirs, err := natsbridge.NewTopic(ctx, js, "named.orders", natsbridge.JSON[shop.Order](), named)
	if err != nil {
		t.Fatalf("NewTopic with the same schema name, another package's type = %v, want nil", err)
	}
	t.Cleanup(func() { _ = theirs.Shutdown(context.Background()) })
	w := watchTopic(t, theirs, natsbridge.WatchOptions{From: 1})
	publishAll(t, mine, 7, 7)
	if got, err := w.Next(ctx); err != nil || got != (shop.Order{ID: 7}) {
		t.Fatalf("the other service read %+v, %v; want order 7", got, err)
	}

	newTopic(t, js, "derived.orders", natsbridge.TopicOptions{})
	_, err = natsbridge.NewTopic(ctx, js, "derived.orders", natsbridge.JSON[shop.Order](), natsbridge.TopicOptions{})
	if !errors.Is(err, natsbridge.ErrTypeMismatch) || !strings.Contains(err.Error(), "natsbridge/internal/shop.Order") || !strings.Contains(err.Error(), "TopicOptions.Schema") {
		t.Fatalf("NewTopic of another package's type on a derived schema = %v, want ErrTypeMismatch naming both and the way out", err)
	}
	_, err = natsbridge.NewTopic(ctx, js, "named.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
	if !errors.Is(err, natsbridge.ErrTypeMismatch) || !strings.Contains(err.Error(), `"shop.Order/v1"`) {
		t.Fatalf("NewTopic with a derived schema on a named one = %v, want ErrTypeMismatch naming the schema", err)
	}
	_, err = natsbridge.NewTopic(ctx, js, "named.orders", natsbridge.Codec[Order](namedCodec{natsbridge.JSON[Order]()}), named)
	if !errors.Is(err, natsbridge.ErrTypeMismatch) || !strings.Contains(err.Error(), `codec "json"`) || !strings.Contains(err.Error(), `"gob-ish"`) {
		t.Fatalf("NewTopic with another codec = %v, want ErrTypeMismatch naming both codecs", err)
	}
}

// namedCodec is JSON under another name.
type namedCodec struct{ natsbridge.Codec[Order] }

func (namedCodec) Name() string { return "gob-ish" }

// localOrders opens topic with a type local to this function, named Order,
// of another shape than the package's Order.
func localOrders(js jetstream.JetStream, topic string) error {
	type Order struct {
		Customer string `json:"customer"`
	}
	_, err := natsbridge.NewTopic(context.Background(), js, topic, natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
	return err
}

// sameShapeOrders opens topic with a type local to this function, named
// Order, of the shape of the package's Order.
func sameShapeOrders(js jetstream.JetStream, topic string) error {
	type Order struct {
		ID   int    `json:"id"`
		Item string `json:"item"`
	}
	t, err := natsbridge.NewTopic(context.Background(), js, topic, natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
	if err == nil {
		_ = t.Shutdown(context.Background())
	}
	return err
}

// TestNewTopicLocalTypes: two types local to functions share a package and
// a name, which is all reflection tells of them; with a derived schema their
// shapes are compared too, so that one is never decoded into the other.
func TestNewTopicLocalTypes(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	if err := sameShapeOrders(js, "local.orders"); err != nil {
		t.Fatal(err)
	}
	if err := localOrders(js, "local.orders"); !errors.Is(err, natsbridge.ErrTypeMismatch) || !strings.Contains(err.Error(), "another shape") {
		t.Fatalf("NewTopic of a local type of another shape, under the same name = %v, want ErrTypeMismatch", err)
	}
	if err := sameShapeOrders(js, "local.orders"); err != nil {
		t.Fatalf("NewTopic of a local type of the same shape again = %v, want nil", err)
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
		{"MaxAge shortened by the owner's Update", &natsbridge.TopicOptions{}, natsbridge.TopicOptions{MaxAge: 30 * time.Second, Update: true}, 30 * time.Second},
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

// TestNewTopicRefusedChange: an Update the server refuses gets the
// server's error, and the stream keeps its configuration and its values
// (none of the call's options is applied).
func TestNewTopicRefusedChange(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	tests := []struct {
		name string
		o    natsbridge.TopicOptions
	}{
		{"storage", natsbridge.TopicOptions{MaxMsgs: 10, Storage: jetstream.MemoryStorage, Update: true}},
		{"replicas without a cluster", natsbridge.TopicOptions{MaxMsgs: 10, Replicas: 3, Update: true}},
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
	p := publisher(t, topic, natsbridge.PublisherOptions{})
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

// TestNewTopicOpensEarlierStreamAsIs: a stream an earlier herald made
// (herald's metadata, the same Go type, no batched publishes) opens with
// zero TopicOptions, as the docs say, and its watchers read it; a
// Publisher, which sends batches, is refused naming TopicOptions.Update,
// after which it works.
func TestNewTopicOpensEarlierStreamAsIs(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "old_orders", Subjects: []string{"old.orders"},
		Metadata: map[string]string{"herald.topic": "old.orders", "herald.type": "github.com/heraldgo/herald/natsbridge_test.Order"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "old.orders", []byte(`{"ID":1}`)); err != nil {
		t.Fatal(err)
	}
	topic, err := natsbridge.NewTopic(ctx, js, "old.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
	if err != nil {
		t.Fatalf("NewTopic with zero options on an earlier herald's stream = %v, want it opened as it is", err)
	}
	t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
	w := watch(t, topic, natsbridge.WatchOptions{From: 1})
	if got := ids(take(t, w, 1)); got[0] != 1 {
		t.Errorf("the watcher read %v, want [1]", got)
	}
	if _, err := topic.Publisher(natsbridge.PublisherOptions{}); !errors.Is(err, natsbridge.ErrConfigDiffers) || !strings.Contains(err.Error(), "TopicOptions.Update") {
		t.Errorf("Publisher on a stream without batched publishes = %v, want ErrConfigDiffers naming TopicOptions.Update", err)
	}
	owner, err := natsbridge.NewTopic(ctx, js, "old.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{Update: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Shutdown(context.Background()) })
	publishAll(t, owner, 2, 3)
	if got := ids(take(t, w, 2)); got[0] != 2 || got[1] != 3 {
		t.Errorf("after the update the watcher read %v, want [2 3]", got)
	}
}

// TestNewTopicStreamWithoutSchema: a stream made with plain JetStream for
// the topic's subject records no schema, so any Topic[T] could open it and
// decode another's values as poison: zero options are refused naming
// TopicOptions.Update, which records the schema; then a topic of another
// type is refused.
func TestNewTopicStreamWithoutSchema(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "plain", Subjects: []string{"plain"}}); err != nil {
		t.Fatal(err)
	}
	_, err := natsbridge.NewTopic(ctx, js, "plain", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
	if !errors.Is(err, natsbridge.ErrTypeMismatch) || !strings.Contains(err.Error(), "TopicOptions.Update") {
		t.Fatalf("NewTopic[Order] with zero options on a stream without a schema = %v, want ErrTypeMismatch naming TopicOptions.Update", err)
	}
	if _, err := natsbridge.NewTopic(ctx, js, "plain", natsbridge.JSON[Invoice](), natsbridge.TopicOptions{}); !errors.Is(err, natsbridge.ErrTypeMismatch) {
		t.Fatalf("NewTopic[Invoice] on it = %v, want ErrTypeMismatch", err)
	}
	newTopic(t, js, "plain", natsbridge.TopicOptions{Update: true}) // records Order's schema
	if _, err := natsbridge.NewTopic(ctx, js, "plain", natsbridge.JSON[Invoice](), natsbridge.TopicOptions{}); !errors.Is(err, natsbridge.ErrTypeMismatch) {
		t.Fatalf("NewTopic[Invoice] once Order's schema is recorded = %v, want ErrTypeMismatch", err)
	}
	newTopic(t, js, "plain", natsbridge.TopicOptions{}) // Order, as it is
}

// TestTopicShutdownErrClosedRemedy: after Topic.Shutdown, Watch, a new
// Publisher's Publish and the watcher's reads return ErrClosed, and the
// errors of the topic and publisher name the remedy.
func TestTopicShutdownErrClosedRemedy(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic, err := natsbridge.NewTopic(testCtx(t), js, "h2closed", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = topic.Watch(testCtx(t), natsbridge.WatchOptions{})
	if !errors.Is(err, natsbridge.ErrClosed) || !strings.Contains(err.Error(), "NewTopic") {
		t.Errorf("Watch after Shutdown: %v", err)
	}
	_, err = topic.Publisher(natsbridge.PublisherOptions{})
	if !errors.Is(err, natsbridge.ErrClosed) || !strings.Contains(err.Error(), "NewTopic") {
		t.Errorf("Publisher after Shutdown: %v", err)
	}
	if _, err := w.Next(testCtx(t)); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Next on a channel watcher after Shutdown: %v", err)
	}
	if _, ok := <-w.Events(); ok {
		t.Error("Events channel open after Shutdown")
	}
	if err := topic.Shutdown(testCtx(t)); err != nil && !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("second Shutdown: %v", err)
	}
	w.Stop()
}
