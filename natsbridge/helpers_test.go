package natsbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// Order is the domain value most tests publish.
type Order struct {
	ID   int    `json:"id"`
	Item string `json:"item"`
}

// Invoice is a second type, for the type-mismatch test.
type Invoice struct {
	Number string `json:"number"`
}

// quiet discards the logs of tests that provoke warnings on purpose.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startServer starts an embedded server with JetStream in a directory of the
// test's own (unless o.Dir is set) and shuts it down when the test ends.
func startServer(t testing.TB, o embedded.Options) *embedded.Server {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := embedded.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// connect opens an in-process connection to s, closed when the test ends.
func connect(t testing.TB, s *embedded.Server, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := s.Connect(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// dial opens a TCP connection to url that reconnects for ever, closed when
// the test ends.
func dial(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	all := append([]nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		// Tests that drop connections on purpose provoke slow-consumer
		// reports; the watchers recover from them.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// newTopic opens a topic of Orders and shuts it down when the test ends.
func newTopic(t testing.TB, js jetstream.JetStream, name string, o natsbridge.TopicOptions) *natsbridge.Topic[Order] {
	t.Helper()
	return newTopicOf(t, js, name, natsbridge.JSON[Order](), o)
}

func newTopicOf[T any](t testing.TB, js jetstream.JetStream, name string, c natsbridge.Codec[T], o natsbridge.TopicOptions) *natsbridge.Topic[T] {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quiet
	}
	topic, err := natsbridge.NewTopic(context.Background(), js, name, c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topic.Shutdown(context.Background()); err != nil {
			t.Errorf("topic Shutdown: %v", err)
		}
	})
	return topic
}

// publishAll publishes orders first..last and waits for every ack.
func publishAll(t testing.TB, topic *natsbridge.Topic[Order], first, last int) natsbridge.PublisherStats {
	t.Helper()
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	for i := first; i <= last; i++ {
		if err := p.Publish(context.Background(), Order{ID: i}); err != nil {
			t.Fatalf("Publish(%d): %v", i, err)
		}
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("publisher Shutdown: %v", err)
	}
	s := p.Stats()
	if want := uint64(last - first + 1); s.Confirmed != want {
		t.Fatalf("publisher confirmed %d, want %d (%+v)", s.Confirmed, want, s)
	}
	return s
}

// watch registers a watcher of topic, stopped when the test ends.
func watch(t testing.TB, topic *natsbridge.Topic[Order], o natsbridge.WatchOptions, prefix ...Order) *natsbridge.Watcher[Order] {
	t.Helper()
	return watchTopic(t, topic, o, prefix...)
}

// watchTopic is watch for a topic of any type.
func watchTopic[T any](t testing.TB, topic *natsbridge.Topic[T], o natsbridge.WatchOptions, prefix ...T) *natsbridge.Watcher[T] {
	t.Helper()
	w, err := topic.Watch(testCtx(t), o, prefix...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// testCtx returns a context that ends when the test does, or after a
// failsafe minute.
func testCtx(t testing.TB) context.Context { return boundedCtx(t, time.Minute) }

// faultCtx is the failsafe bound of a whole fault scenario on a cluster
// (publishing through elections of 5 to 9 s each, on a machine whose
// cores the cluster shares with the build of other packages).
func faultCtx(t testing.TB) context.Context { return boundedCtx(t, 4*time.Minute) }

// boundedCtx is a failsafe bound for a call the test expects to return
// promptly; hitting it is the failure being reported, never a timing
// assertion on a call that is supposed to wait.
func boundedCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// take reads n values from w, failing the test if it cannot, and is done
// with them: on a durable watcher, the last one is done too (Next marks
// the one before it done).
func take(t testing.TB, w *natsbridge.Watcher[Order], n int) []Order {
	t.Helper()
	ctx := testCtx(t)
	got := make([]Order, 0, n)
	for len(got) < n {
		v, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d of %d values: %v", len(got), n, err)
		}
		got = append(got, v)
	}
	w.Done(w.Seq())
	return got
}

// firstToRead returns, of two watchers of one durable position, the one
// that hands out a value first, the other, and that value: whichever asked
// the server first reads, which the order of their Watch calls does not
// decide on a busy machine.
func firstToRead(t testing.TB, a, b *natsbridge.Watcher[Order]) (active, standby *natsbridge.Watcher[Order], v Order) {
	t.Helper()
	for testCtx(t).Err() == nil {
		for _, w := range []*natsbridge.Watcher[Order]{a, b} {
			short, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
			v, err := w.Next(short)
			cancel()
			switch {
			case err == nil && w == a:
				return a, b, v
			case err == nil:
				return b, a, v
			case !errors.Is(err, context.DeadlineExceeded):
				t.Fatal(err)
			}
		}
	}
	t.Fatal("neither watcher of the durable position read")
	return nil, nil, v
}

// durableRecord reads a durable position's record from the topic's bucket
// (see the package doc, "Durable watchers").
func durableRecord(t testing.TB, js jetstream.JetStream, topic, durable string) durableRec {
	t.Helper()
	kv, err := js.KeyValue(testCtx(t), "herald_"+strings.ReplaceAll(topic, ".", "_"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(testCtx(t), durable)
	if err != nil {
		t.Fatal(err)
	}
	var rec durableRec
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// durableRec is a durable position's record.
type durableRec struct {
	Owner  string `json:"owner"`
	Handed uint64 `json:"handed"`
}

// drain reads w until it is closed.
func drain(t testing.TB, w *natsbridge.Watcher[Order]) []Order {
	t.Helper()
	ctx := testCtx(t)
	var got []Order
	for {
		v, err := w.Next(ctx)
		if errors.Is(err, natsbridge.ErrClosed) {
			return got
		}
		if err != nil {
			t.Fatalf("Next after %d values: %v", len(got), err)
		}
		got = append(got, v)
	}
}

// ids returns the IDs of orders.
func ids(orders []Order) []int {
	out := make([]int, len(orders))
	for i, o := range orders {
		out[i] = o.ID
	}
	return out
}

// span returns first, first+1, …, last.
func span(first, last int) []int {
	var out []int
	for i := first; i <= last; i++ {
		out = append(out, i)
	}
	return out
}

// eventually polls cond until it holds, failing the test after a failsafe
// timeout. It is for state only the server knows (consumers, stream
// contents), never for timing.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after 30s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// consumers returns the number of consumers on stream.
func consumers(t testing.TB, js jetstream.JetStream, stream string) int {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	l := s.ListConsumers(context.Background())
	for range l.Info() {
		n++
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func describe(s natsbridge.PublisherStats) string {
	return fmt.Sprintf("published %d = confirmed %d + failed %d + unconfirmed %d + pending %d",
		s.Published, s.Confirmed, s.Failed, s.Unconfirmed, s.Pending)
}

// logRecorder keeps every line logged through its Logger, for tests of
// what the package logs.
type logRecorder struct {
	mu   sync.Mutex // guards recs, text
	recs []slog.Record
	text bytes.Buffer
}

// Logger returns a logger that writes to r.
func (r *logRecorder) Logger() *slog.Logger {
	return slog.New(recordHandler{r: r, h: slog.NewTextHandler(r, nil)})
}

// Write takes the text handler's output.
func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.Write(p)
}

// String returns every line logged so far, as text.
func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

// reported returns how many problems logged with message msg the lines
// account for: each line with that message, the count of lines it says
// were suppressed before it, and the count of final "warnings suppressed"
// lines whose latest suppressed line had that message.
func (r *logRecorder) reported(msg string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n uint64
	for _, rec := range r.recs {
		attrs := map[string]slog.Value{}
		rec.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value
			return true
		})
		switch {
		case rec.Message == msg:
			n++
			if s, ok := attrs["suppressed"]; ok {
				n += s.Uint64()
			}
		case rec.Message == "natsbridge: warnings suppressed" && attrs["last"].String() == msg:
			n += attrs["suppressed"].Uint64()
		}
	}
	return n
}

// recordHandler keeps each record in r and writes it through h.
type recordHandler struct {
	r *logRecorder
	h slog.Handler
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(ctx context.Context, rec slog.Record) error {
	h.r.mu.Lock()
	h.r.recs = append(h.r.recs, rec.Clone())
	h.r.mu.Unlock()
	return h.h.Handle(ctx, rec)
}

func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordHandler{r: h.r, h: h.h.WithAttrs(as)}
}

func (h recordHandler) WithGroup(name string) slog.Handler {
	return recordHandler{r: h.r, h: h.h.WithGroup(name)}
}

// slowLink forwards TCP connections to addr, delaying what the server
// sends by delay: a link with that much latency one way. It is closed
// when the test ends.
func slowLink(t testing.TB, addr string, delay time.Duration) (url string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			track(client)
			track(server)
			wg.Go(func() { // client to server, at once
				_, _ = io.Copy(server, client)
				server.Close()
				client.Close()
			})
			type chunk struct {
				due  time.Time
				data []byte
			}
			chunks := make(chan chunk, 1<<16)
			wg.Go(func() { // server to client, read at once
				defer close(chunks)
				for {
					buf := make([]byte, 32<<10)
					n, err := server.Read(buf)
					if n > 0 {
						chunks <- chunk{time.Now().Add(delay), buf[:n]}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() { // and written once due
				for c := range chunks {
					time.Sleep(time.Until(c.due)) // the link's latency, not a synchronisation
					if _, err := client.Write(c.data); err != nil {
						client.Close()
						server.Close()
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "nats://" + ln.Addr().String()
}

// parkedIn reports whether a goroutine is parked in a select in the
// function named by frame (as a stack trace spells it, such as
// ").pump("), called from functions named by every one of callers. It is
// for a goroutine that offers nothing to wait on.
func parkedIn(frame string, callers ...string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
next:
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 || !strings.Contains(lines[0], "[select") || !strings.Contains(lines[1], frame) {
			continue
		}
		for _, c := range callers {
			if !strings.Contains(g, c) {
				continue next
			}
		}
		return true
	}
	return false
}

// faultLogEnv names a file that tests append their fault timings to
// (failover times, stalls, takeovers), one line each: .ci/run sets it and
// prints the file, so that the figures show without -v.
const faultLogEnv = "HERALD_FAULT_LOG"

var faultLogMu sync.Mutex

// logFault logs a fault timing, and appends it to the file faultLogEnv
// names, if set.
func logFault(t testing.TB, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log("fault: " + line)
	path := os.Getenv(faultLogEnv)
	if path == "" {
		return
	}
	faultLogMu.Lock()
	defer faultLogMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("fault log: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s: %s\n", t.Name(), line)
}

// publisher returns a new publisher of topic, failing the test if it
// cannot.
func publisher[T any](t testing.TB, topic *natsbridge.Topic[T], o natsbridge.PublisherOptions) *natsbridge.Publisher[T] {
	t.Helper()
	p, err := topic.Publisher(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
