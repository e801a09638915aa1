package natsbridge_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// Requests NewTopic, Watch and Mirror make that the server leaves
// unanswered, lost on purpose one by one (a link that drops or holds the
// next request on a given subject): whatever is lost, a call returns a
// working watcher, mirror or topic, or an error, within its ctx, and
// leaves no consumer behind.

// lostHold is how long a held request waits before the link lets it
// through: longer than an attempt (5 s), so that it lands after the
// attempt that sent it timed out.
const lostHold = 7 * time.Second

// lossyLink forwards TCP connections to a NATS server, and loses or delays
// chosen requests. Armed with rules, it acts on the next piece of what the
// client sends that holds the first rule's subject (the start of one, as
// "$JS.API.CONSUMER.CREATE.S."), then on the next that holds the second's,
// and so on: a lost request is dropped with its connection (a request
// written, then cut), a held one stops all traffic both ways from that
// piece on until release (a silent path, after which the request lands
// late). While the link is down, the connections made through it are
// closed at once (a server out of reach).
type lossyLink struct {
	ln     net.Listener
	target string
	hits   chan string // the subject of each rule that took effect

	mu    sync.Mutex // guards conns, rules, gate, down
	conns map[net.Conn]struct{}
	rules []linkRule
	gate  chan struct{} // closed while traffic flows
	down  bool

	wg sync.WaitGroup
}

// A linkRule loses (or holds, if hold) the next request on subject.
type linkRule struct {
	subject  string
	hold     bool
	thenDown bool // and take the server out of reach
}

func newLossyLink(t *testing.T, url string) *lossyLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &lossyLink{ln: ln, target: strings.TrimPrefix(url, "nats://"), hits: make(chan string, 16), conns: map[net.Conn]struct{}{}, gate: make(chan struct{})}
	close(l.gate)
	l.wg.Go(l.accept)
	t.Cleanup(l.close)
	return l
}

func (l *lossyLink) URL() string { return "nats://" + l.ln.Addr().String() }

// lose arms the link to drop the next request on each subject, in order.
func (l *lossyLink) lose(subjects ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range subjects {
		l.rules = append(l.rules, linkRule{subject: s})
	}
}

// loseThenDown arms the link to drop the next request on subject and take
// the server out of reach at once, until setDown(false).
func (l *lossyLink) loseThenDown(subject string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, linkRule{subject: subject, thenDown: true})
}

// hold arms the link to hold everything from the next request on subject
// on, until release.
func (l *lossyLink) hold(subject string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, linkRule{subject: subject, hold: true})
}

// release lets through what a hold stopped.
func (l *lossyLink) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.gate:
	default:
		close(l.gate)
	}
}

// setDown takes the server out of reach (or back): connections made
// through the link are closed at once.
func (l *lossyLink) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
}

// hit waits for the next rule to take effect, failing the test after a
// failsafe minute.
func (l *lossyLink) hit(t *testing.T) {
	t.Helper()
	select {
	case s := <-l.hits:
		t.Logf("request on %s lost or held", s)
	case <-time.After(time.Minute):
		t.Fatal("no request on the armed subject within a minute")
	}
}

func (l *lossyLink) accept() {
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		down := l.down
		l.mu.Unlock()
		if down {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			client.Close()
			continue
		}
		l.mu.Lock()
		if l.conns == nil {
			l.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		l.conns[client], l.conns[server] = struct{}{}, struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() { l.pipe(server, client, true) })
		l.wg.Go(func() { l.pipe(client, server, false) })
	}
}

// pipe copies src to dst until either fails; from the client (fromClient),
// it applies the rules.
func (l *lossyLink) pipe(dst, src net.Conn, fromClient bool) {
	defer func() {
		l.mu.Lock()
		delete(l.conns, src)
		delete(l.conns, dst)
		l.mu.Unlock()
		src.Close()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	var tail []byte // the end of the last piece: a subject may span two
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromClient {
				seen := append(tail, buf[:n]...)
				if l.drops(seen) {
					return
				}
				tail = append([]byte(nil), seen[max(0, len(seen)-128):]...)
			}
			l.mu.Lock()
			gate := l.gate
			l.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drops applies the first rule to a piece the client sent, and reports
// whether the piece is to be dropped with its connection.
func (l *lossyLink) drops(piece []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rules) == 0 || !bytes.Contains(piece, []byte(l.rules[0].subject)) {
		return false
	}
	r := l.rules[0]
	l.rules = l.rules[1:]
	l.hits <- r.subject
	l.down = l.down || r.thenDown
	if r.hold {
		select {
		case <-l.gate:
			l.gate = make(chan struct{})
		default:
		}
		return false
	}
	return true
}

func (l *lossyLink) close() {
	l.ln.Close()
	l.mu.Lock()
	for c := range l.conns {
		c.Close()
	}
	l.conns = nil
	l.mu.Unlock()
	l.release()
	l.wg.Wait()
}

// lossyTopic is a topic of Orders reached through a lossy link, holding
// values 1..stored, and the same topic reached directly, to look at the
// server with.
type lossyTopic struct {
	link   *lossyLink
	nc     *nats.Conn
	js     jetstream.JetStream // through the link
	topic  *natsbridge.Topic[Order]
	direct jetstream.JetStream
	other  *natsbridge.Topic[Order] // the topic, directly
	name   string
	stream string
}

func newLossyTopic(t *testing.T, name string, stored int) *lossyTopic {
	t.Helper()
	s := natstest.StartServer(t, natstest.Options{})
	lt := &lossyTopic{link: newLossyLink(t, s.URL()), name: name, stream: strings.ReplaceAll(name, ".", "_")}
	lt.nc, lt.js = dial(t, lt.link.URL())
	_, lt.direct = dial(t, s.URL())
	lt.topic = newTopic(t, lt.js, name, natsbridge.TopicOptions{})
	lt.other = newTopic(t, lt.direct, name, natsbridge.TopicOptions{})
	if stored > 0 {
		publishAll(t, lt.other, 1, stored)
	}
	return lt
}

// createSubject is the start of the subject of a request that creates a
// consumer of the topic's stream (named name, if not empty).
func (lt *lossyTopic) createSubject(name string) string {
	return "$JS.API.CONSUMER.CREATE." + lt.stream + "." + name
}

// herald returns the names of the feeds' consumers on the topic's stream
// (herald_*), and the count of all its consumers.
func (lt *lossyTopic) herald(t *testing.T) (names []string, all int) {
	t.Helper()
	s, err := lt.direct.Stream(context.Background(), lt.stream)
	if err != nil {
		t.Fatal(err)
	}
	l := s.ListConsumers(context.Background())
	for info := range l.Info() {
		all++
		if strings.HasPrefix(info.Name, "herald_") {
			names = append(names, info.Name)
		}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return names, all
}

// noConsumerComes checks that no consumer is on the topic's stream once
// what the link let through has reached the server: after a round trip of
// the connection through it, a bounded poll of a second, as the server
// handles the requests it took side by side, in no set order.
func (lt *lossyTopic) noConsumerComes(t *testing.T, what string) {
	t.Helper()
	lt.flushed(t)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if names, all := lt.herald(t); all != 0 {
			t.Fatalf("%s: %d consumers left on the server (herald's: %q)", what, all, names)
		}
		time.Sleep(20 * time.Millisecond) // a bounded poll for an absence
	}
}

// flushed waits until the connection through the link is up and what it
// sent has made a round trip.
func (lt *lossyTopic) flushed(t *testing.T) {
	t.Helper()
	eventually(t, "the connection through the link is up and flushed", func() bool {
		n, err := lt.nc.Buffered()
		return lt.nc.IsConnected() && err == nil && n == 0 && lt.nc.Flush() == nil
	})
}

// noConsumerStays is noConsumerComes for a call that gave up while its
// create was on its way: the call deletes the name it created, but the
// server handles API requests side by side and may take the deletion
// before a create that lands late (or one sent from the connection's
// buffer after a reconnect). What such a create leaves, one consumer at
// most, is herald's, and the server drops it by itself once nobody
// pulls from it (its inactive threshold, 5 minutes): it stays no longer.
func (lt *lossyTopic) noConsumerStays(t *testing.T, what string) {
	t.Helper()
	lt.flushed(t)
	logged := false
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		s, err := lt.direct.Stream(context.Background(), lt.stream)
		if err != nil {
			t.Fatal(err)
		}
		l := s.ListConsumers(context.Background())
		n := 0
		for info := range l.Info() {
			n++
			if !strings.HasPrefix(info.Name, "herald_") || info.Config.InactiveThreshold <= 0 || info.Config.InactiveThreshold > 5*time.Minute || n > 1 {
				t.Fatalf("%s: consumer %q left on the server (inactive threshold %v, %d so far): want none, or herald's one the server drops", what, info.Name, info.Config.InactiveThreshold, n)
			}
			if !logged {
				t.Logf("%s: consumer %q left, its create landing after the call gave up; the server drops it after %v", what, info.Name, info.Config.InactiveThreshold)
				logged = true
			}
		}
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // a bounded poll for an absence
	}
}

// inBackground runs call in a goroutine of its own, and hands what it
// returned, and when, to the channel it returns.
func inBackground(call func() error) <-chan result {
	done := make(chan result, 1)
	go func() { done <- result{call(), time.Now()} }()
	return done
}

// watchThenStop is inBackground for a Watch from the stream's first
// value that stops the watcher it gets at once.
func (lt *lossyTopic) watchThenStop(ctx context.Context) <-chan result {
	return inBackground(func() error {
		w, err := lt.topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
		if err == nil {
			w.Stop()
		}
		return err
	})
}

// result is what a call returned, and when.
type result struct {
	err error
	at  time.Time
}

// within waits for a call's result, failing the test if it has not come a
// failsafe minute after its ctx ended (or after a minute and a half).
func within(t *testing.T, ctx context.Context, what string, done <-chan result) result {
	t.Helper()
	failsafe := time.After(90 * time.Second)
	select {
	case r := <-done:
		return r
	case <-failsafe:
		t.Fatalf("%s has not returned after 90 s (its ctx: %v)", what, ctx.Err())
	}
	return result{}
}

// readsOnce checks that w reads 1..n, in order, once, and nothing more.
func readsOnce(t *testing.T, w *natsbridge.Watcher[Order], n int) {
	t.Helper()
	if diff := cmp.Diff(span(1, n), ids(take(t, w, n))); diff != "" {
		t.Fatalf("read after lost requests (-want +got):\n%s", diff)
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if v, err := w.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read %v (%v) after the last value", v, err)
	}
}

// TestLostRequestsWatchReadsOnce loses Watch's requests (the stream's
// state, the create of its consumer), one or more in a row, or holds its
// create past an attempt: Watch returns a watcher that reads every value
// once, in order, through one consumer, deleted at Stop; or, when every
// attempt of a ctx without a deadline is lost, an error, and no consumer.
func TestLostRequestsWatchReadsOnce(t *testing.T) {
	t.Parallel() // they wait out attempts, not on the CPU
	cases := []struct {
		name string
		arm  func(lt *lossyTopic)
		fail bool // every attempt lost
		// held, if not zero, is how long the link holds what it held.
		held time.Duration
	}{
		{"create lost", func(lt *lossyTopic) { lt.link.lose(lt.createSubject("")) }, false, 0},
		{"state and create lost", func(lt *lossyTopic) {
			lt.link.lose("$JS.API.STREAM.INFO."+lt.stream, lt.createSubject(""))
		}, false, 0},
		{"create lost twice", func(lt *lossyTopic) { lt.link.lose(lt.createSubject(""), lt.createSubject("")) }, false, 0},
		{"create lost three times", func(lt *lossyTopic) {
			lt.link.lose(lt.createSubject(""), lt.createSubject(""), lt.createSubject(""))
		}, true, 0},
		{"create held past an attempt", func(lt *lossyTopic) { lt.link.hold(lt.createSubject("")) }, false, lostHold},
		// The first attempt's create, the deletion of its name after it
		// timed out (2 s more), and the second attempt's create, of the
		// same name, land together.
		{"create held past its deletion", func(lt *lossyTopic) { lt.link.hold(lt.createSubject("")) }, false, lostHold + 500*time.Millisecond},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lt := newLossyTopic(t, "lost.watch"+string(rune('a'+i)), 5)
			c.arm(lt)
			ctx, cancel := context.WithCancel(context.Background()) // no deadline: three attempts
			defer cancel()
			var w *natsbridge.Watcher[Order]
			done := inBackground(func() (err error) {
				w, err = lt.topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
				return err
			})
			lt.link.hit(t)
			var r result
			if c.held > 0 {
				select {
				case r = <-done:
					t.Fatalf("Watch returned (%v) while its request was held", r.err)
				case <-time.After(c.held): // the fault's length
				}
				lt.link.release()
			}
			r = within(t, ctx, "Watch", done)
			if c.fail {
				if r.err == nil {
					w.Stop()
					t.Fatal("Watch returned a watcher after every attempt was lost")
				}
				t.Logf("Watch: %v", r.err)
				lt.noConsumerComes(t, "a Watch that failed")
				return
			}
			if r.err != nil {
				t.Fatalf("Watch after lost requests: %v", r.err)
			}
			t.Cleanup(w.Stop)
			// One consumer, but for a while when the server handled the
			// first attempt's deletion after the second's create (it
			// handles the requests that land together side by side): the
			// watcher loses that consumer and makes another.
			if names, all := lt.herald(t); len(names) != 1 || all != 1 {
				t.Logf("consumers as Watch returned: herald's %q, %d in all", names, all)
			}
			eventually(t, "one consumer while the watcher runs", func() bool { names, all := lt.herald(t); return len(names) == 1 && all == 1 })
			readsOnce(t, w, 5)
			w.Stop()
			eventually(t, "the watcher's consumer deleted at Stop", func() bool { _, all := lt.herald(t); return all == 0 })
			lt.noConsumerComes(t, "a stopped watcher")
		})
	}
}

// TestLostHeldEveryAttemptLeavesNoConsumer holds Watch's create, and what
// follows it, through every attempt of a ctx without a deadline: Watch
// fails, and once the link lets everything through, late, the server holds
// no consumer (each create it takes is followed by its deletion).
func TestLostHeldEveryAttemptLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	lt := newLossyTopic(t, "lost.held.every", 5)
	lt.link.hold(lt.createSubject(""))
	ctx := context.Background()
	done := lt.watchThenStop(ctx)
	lt.link.hit(t)
	r := within(t, ctx, "Watch", done)
	if r.err == nil {
		t.Fatal("Watch returned a watcher while the path was silent")
	}
	t.Logf("Watch: %v", r.err)
	lt.link.release()
	lt.noConsumerStays(t, "a Watch that failed, its requests landing late")
}

// TestLostCancelLeavesNoConsumer cancels the ctx of a Watch (or Mirror)
// while the create of its consumer is on its way (held by the link; after
// a first attempt lost, or not): the call returns at once with the
// cancellation, and once the create lands, late, no consumer is left.
func TestLostCancelLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	calls := []struct {
		name string
		call func(ctx context.Context, topic *natsbridge.Topic[Order]) error
	}{
		{"Watch", func(ctx context.Context, topic *natsbridge.Topic[Order]) error {
			w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"Mirror", func(ctx context.Context, topic *natsbridge.Topic[Order]) error {
			b, err := topic.Mirror(ctx, broadcast.Options{})
			if err == nil {
				err = errors.Join(errors.New("Mirror returned a broadcaster"), b.Shutdown(context.Background()))
			}
			return err
		}},
	}
	for i, c := range calls {
		for _, retried := range []bool{false, true} {
			name := c.name
			if retried {
				name += " after a lost attempt"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				lt := newLossyTopic(t, "lost.cancel"+string(rune('a'+i))+map[bool]string{false: "a", true: "b"}[retried], 5)
				if retried {
					lt.link.lose(lt.createSubject(""))
				}
				lt.link.hold(lt.createSubject(""))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := inBackground(func() error { return c.call(ctx, lt.topic) })
				if retried {
					lt.link.hit(t)
				}
				lt.link.hit(t)
				cancelled := time.Now()
				cancel()
				r := within(t, ctx, c.name, done)
				if !errors.Is(r.err, context.Canceled) {
					t.Errorf("%s cancelled while its create was on its way: %v, want context.Canceled", c.name, r.err)
				}
				if late := r.at.Sub(cancelled); late > time.Second {
					t.Errorf("%s returned %v after its ctx was cancelled", c.name, late.Round(time.Millisecond))
				}
				lt.link.release()
				lt.noConsumerStays(t, c.name+" cancelled")
			})
		}
	}
}

// TestLostDeadlineEndsWatch: a Watch whose ctx ends while its create is on
// its way (held), or in the pause between two attempts, returns the ctx's
// error when the ctx ends, not later; and no consumer is left once the
// create lands.
func TestLostDeadlineEndsWatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		arm  func(lt *lossyTopic)
		// after is how long after the request's loss (or hold) the ctx
		// ends.
		after time.Duration
	}{
		{"during the attempt", func(lt *lossyTopic) { lt.link.hold(lt.createSubject("")) }, 2 * time.Second},
		{"about the attempt's end", func(lt *lossyTopic) { lt.link.lose(lt.createSubject("")) }, 5*time.Second + 20*time.Millisecond},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lt := newLossyTopic(t, "lost.deadline"+string(rune('a'+i)), 5)
			c.arm(lt)
			// The deadline counts from Watch's start; its create goes out
			// (and is lost or held) within milliseconds of it.
			ctx, cancel := context.WithTimeout(context.Background(), c.after)
			defer cancel()
			deadline, _ := ctx.Deadline()
			done := lt.watchThenStop(ctx)
			lt.link.hit(t)
			r := within(t, ctx, "Watch", done)
			if r.err == nil {
				t.Fatal("Watch returned a watcher, its request lost and its ctx ended")
			}
			if !errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("Watch: %v, want context.DeadlineExceeded", r.err)
			}
			if late := r.at.Sub(deadline); late > time.Second {
				t.Errorf("Watch returned %v after its ctx ended (%v)", late.Round(time.Millisecond), r.err)
			}
			lt.link.release()
			lt.noConsumerStays(t, "a Watch whose ctx ended")
		})
	}
}

// TestLostWhileReconnectingLeavesNoConsumer loses Watch's create with its
// connection, and keeps the server out of reach: the next attempt's create
// waits in the connection's buffer while it reconnects, and the ctx ends.
// Watch fails; once the connection is back, the buffered create reaches
// the server, and the consumer it makes must not stay behind.
func TestLostWhileReconnectingLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	lt := newLossyTopic(t, "lost.reconnecting", 5)
	lt.link.loseThenDown(lt.createSubject(""))
	// Long enough for a second attempt, made while the server is out of
	// reach (5 s, and a pause, after the first).
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
	defer cancel()
	done := lt.watchThenStop(ctx)
	lt.link.hit(t)
	r := within(t, ctx, "Watch", done)
	if r.err == nil {
		t.Fatal("Watch returned a watcher while the server was out of reach")
	}
	t.Logf("Watch: %v", r.err)
	lt.link.setDown(false)
	lt.noConsumerStays(t, "a Watch that failed while the connection reconnected")
}

// TestLostDurableBind loses or delays the requests that bind a durable
// watcher to its position (the create of the durable consumer, the
// position's information, the bucket of records): Watch returns a watcher
// that reads every value once, in order, through the one durable consumer,
// owning its record; a second reader of the position stands by, and takes
// it over at the first one's Stop, reading on from there. A Watch
// cancelled while the create was on its way fails, and the position it
// made, late, serves the next Watch as a new one.
func TestLostDurableBind(t *testing.T) {
	t.Parallel()
	const durable = "billing"
	cases := []struct {
		name string
		arm  func(lt *lossyTopic)
		// deadline, if set, gives Watch a ctx with a deadline (as many
		// attempts as it lasts) rather than none (three).
		deadline bool
		cancel   bool // cancel Watch once the rule took effect
	}{
		{"create held past an attempt", func(lt *lossyTopic) { lt.link.hold(lt.createSubject(durable)) }, false, false},
		{"record bucket create lost", func(lt *lossyTopic) {
			lt.link.lose("$JS.API.STREAM.CREATE.KV_herald_" + lt.stream)
		}, false, false},
		{"position, create and position lost", func(lt *lossyTopic) {
			info := "$JS.API.CONSUMER.INFO." + lt.stream + "." + durable
			lt.link.lose(info, lt.createSubject(durable), info)
		}, true, false},
		{"cancelled with its create held", func(lt *lossyTopic) { lt.link.hold(lt.createSubject(durable)) }, false, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lt := newLossyTopic(t, "lost.durable"+string(rune('a'+i)), 5)
			c.arm(lt)
			ctx, cancel := context.WithCancel(context.Background())
			if c.deadline {
				ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
			}
			defer cancel()
			opts := natsbridge.WatchOptions{From: 1, Durable: durable}
			var w1 *natsbridge.Watcher[Order]
			done := inBackground(func() (err error) {
				w1, err = lt.topic.Watch(ctx, opts)
				return err
			})
			lt.link.hit(t)
			switch {
			case c.cancel:
				cancel()
			case strings.Contains(c.name, "held"):
				select {
				case r := <-done:
					t.Fatalf("Watch returned (%v) while its request was held", r.err)
				case <-time.After(lostHold): // the fault's length
				}
			}
			lt.link.release()
			r := within(t, ctx, "durable Watch", done)
			if c.cancel {
				if !errors.Is(r.err, context.Canceled) {
					if r.err == nil {
						w1.Stop()
					}
					t.Fatalf("durable Watch cancelled with its create held: %v, want context.Canceled", r.err)
				}
				// The next Watch, through a connection that lost nothing,
				// reads the position as a new one.
				w1 = watch(t, lt.other, opts)
			} else if r.err != nil {
				t.Fatalf("durable Watch after lost requests: %v", r.err)
			} else {
				t.Cleanup(w1.Stop)
			}
			readsOnce(t, w1, 5)
			if names, all := lt.herald(t); len(names) != 0 || all != 1 {
				t.Errorf("consumers of a durable watcher: herald's %q, %d in all; want the durable one alone", names, all)
			}
			first := durableRecord(t, lt.direct, lt.name, durable).Owner
			if first == "" {
				t.Fatal("the durable record names no owner after the watcher read")
			}
			w2 := watch(t, lt.other, opts)
			publishAll(t, lt.other, 6, 8)
			// w1 holds the turn; it reads what comes while w2 stands by,
			// then stops and hands over.
			w1.Stop()
			if diff := cmp.Diff(span(6, 8), ids(take(t, w2, 3))); diff != "" {
				t.Fatalf("the second reader after the hand-over (-want +got):\n%s", diff)
			}
			if second := durableRecord(t, lt.direct, lt.name, durable).Owner; second == "" || second == first {
				t.Errorf("the record's owner after the takeover: %q (before it: %q)", second, first)
			}
			if _, all := lt.herald(t); all != 1 {
				t.Errorf("%d consumers after the takeover, want the durable one", all)
			}
		})
	}
}

// TestLostMirror loses or delays Mirror's requests: it returns a
// broadcaster fed with what is stored after it, once, in order, by one
// consumer, deleted at its Shutdown.
func TestLostMirror(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		arm  func(lt *lossyTopic)
	}{
		{"state lost", func(lt *lossyTopic) { lt.link.lose("$JS.API.STREAM.INFO." + lt.stream) }},
		{"create lost twice", func(lt *lossyTopic) { lt.link.lose(lt.createSubject(""), lt.createSubject("")) }},
		{"create held past an attempt", func(lt *lossyTopic) { lt.link.hold(lt.createSubject("")) }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lt := newLossyTopic(t, "lost.mirror"+string(rune('a'+i)), 5)
			c.arm(lt)
			ctx := context.Background() // no deadline: three attempts
			var b *broadcast.Broadcaster[Order]
			done := inBackground(func() (err error) {
				b, err = lt.topic.Mirror(ctx, broadcast.Options{})
				return err
			})
			lt.link.hit(t)
			if strings.Contains(c.name, "held") {
				select {
				case r := <-done:
					t.Fatalf("Mirror returned (%v) while its request was held", r.err)
				case <-time.After(lostHold): // the fault's length
				}
				lt.link.release()
			}
			if r := within(t, ctx, "Mirror", done); r.err != nil {
				t.Fatalf("Mirror after lost requests: %v", r.err)
			}
			w, err := b.Watch()
			if err != nil {
				t.Fatal(err)
			}
			publishAll(t, lt.other, 6, 10)
			if diff := cmp.Diff(span(6, 10), readAll(t, w, 5)); diff != "" {
				t.Fatalf("the mirror's watcher (-want +got):\n%s", diff)
			}
			short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if v, err := w.Next(short); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the mirror's watcher read %v (%v) after the last value", v, err)
			}
			if names, all := lt.herald(t); len(names) != 1 || all != 1 {
				t.Errorf("consumers while the mirror runs: herald's %q, %d in all; want one", names, all)
			}
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the mirror's consumer deleted at Shutdown", func() bool { _, all := lt.herald(t); return all == 0 })
			lt.noConsumerComes(t, "a mirror shut down")
		})
	}
}

// TestLostNewTopic loses or delays the requests NewTopic makes to open its
// stream: it opens the topic, which carries values; one cancelled while
// the stream's create was on its way fails, and the stream made late is
// the topic's, which NewTopic then opens as it is.
func TestLostNewTopic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		arm    func(l *lossyLink, stream string)
		cancel bool
	}{
		{"state lost", func(l *lossyLink, stream string) { l.lose("$JS.API.STREAM.INFO." + stream) }, false},
		{"create lost twice", func(l *lossyLink, stream string) {
			l.lose("$JS.API.STREAM.CREATE."+stream, "$JS.API.STREAM.CREATE."+stream)
		}, false},
		{"create held past an attempt", func(l *lossyLink, stream string) { l.hold("$JS.API.STREAM.CREATE." + stream) }, false},
		{"cancelled with its create held", func(l *lossyLink, stream string) { l.hold("$JS.API.STREAM.CREATE." + stream) }, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := natstest.StartServer(t, natstest.Options{})
			link := newLossyLink(t, s.URL())
			_, js := dial(t, link.URL())
			_, direct := dial(t, s.URL())
			name := "lost.topic" + string(rune('a'+i))
			stream := strings.ReplaceAll(name, ".", "_")
			c.arm(link, stream)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var topic *natsbridge.Topic[Order]
			done := inBackground(func() (err error) {
				topic, err = natsbridge.NewTopic(ctx, js, name, natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
				return err
			})
			link.hit(t)
			switch {
			case c.cancel:
				cancel()
			case strings.Contains(c.name, "held"):
				select {
				case r := <-done:
					t.Fatalf("NewTopic returned (%v) while its request was held", r.err)
				case <-time.After(lostHold): // the fault's length
				}
			}
			link.release()
			r := within(t, ctx, "NewTopic", done)
			if c.cancel {
				if !errors.Is(r.err, context.Canceled) {
					t.Fatalf("NewTopic cancelled with its create held: %v, want context.Canceled", r.err)
				}
				eventually(t, "the stream created late", func() bool {
					_, err := direct.Stream(context.Background(), stream)
					return err == nil
				})
				topic = newTopic(t, js, name, natsbridge.TopicOptions{})
			} else {
				if r.err != nil {
					t.Fatalf("NewTopic after lost requests: %v", r.err)
				}
				t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
			}
			other := newTopic(t, direct, name, natsbridge.TopicOptions{})
			w := watch(t, other, natsbridge.WatchOptions{})
			publishAll(t, topic, 1, 3)
			readsOnce(t, w, 3)
		})
	}
}

// TestLostSilentPathPastAnAttempt holds everything a call sends and
// receives for longer than an attempt, from its first request, then lets
// it all through, late, without a cut: the late answers make no second
// consumer, and the call's watcher or mirror reads.
func TestLostSilentPathPastAnAttempt(t *testing.T) {
	t.Parallel()
	// Each call returns what to check of its result, once it returned.
	calls := []struct {
		name string
		call func(ctx context.Context, lt *silentTopic) (check func(t *testing.T), err error)
	}{
		{"NewTopic", func(ctx context.Context, lt *silentTopic) (func(*testing.T), error) {
			topic, err := natsbridge.NewTopic(ctx, lt.js, lt.name+".new", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
			if err == nil {
				err = topic.Shutdown(ctx)
			}
			return func(*testing.T) {}, err
		}},
		{"Watch", func(ctx context.Context, lt *silentTopic) (func(*testing.T), error) {
			w, err := lt.topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
			return func(t *testing.T) {
				defer w.Stop()
				if names, all := lt.herald(t); len(names) != 1 || all != 1 {
					t.Errorf("consumers while the watcher runs: herald's %q, %d in all; want one", names, all)
				}
				readsOnce(t, w, 3)
			}, err
		}},
		{"durable Watch", func(ctx context.Context, lt *silentTopic) (func(*testing.T), error) {
			w, err := lt.topic.Watch(ctx, natsbridge.WatchOptions{From: 1, Durable: "silent"})
			return func(t *testing.T) {
				defer w.Stop()
				readsOnce(t, w, 3)
				if names, all := lt.herald(t); len(names) != 0 || all != 1 {
					t.Errorf("consumers of a durable watcher: herald's %q, %d in all; want the durable one alone", names, all)
				}
			}, err
		}},
		{"Mirror", func(ctx context.Context, lt *silentTopic) (func(*testing.T), error) {
			b, err := lt.topic.Mirror(ctx, broadcast.Options{})
			return func(t *testing.T) {
				if names, all := lt.herald(t); len(names) != 1 || all != 1 {
					t.Errorf("consumers while the mirror runs: herald's %q, %d in all; want one", names, all)
				}
				if err := b.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			}, err
		}},
	}
	for i, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := natstest.StartServer(t, natstest.Options{})
			relay := natstest.NewRelay(t, s.URL())
			lt := &silentTopic{name: "lost.silent" + string(rune('a'+i))}
			lt.stream = strings.ReplaceAll(lt.name, ".", "_")
			var nc *nats.Conn
			nc, lt.js = dial(t, relay.URL())
			_, lt.direct = dial(t, s.URL())
			lt.topic = newTopic(t, lt.js, lt.name, natsbridge.TopicOptions{})
			publishAll(t, lt.topic, 1, 3)
			relay.Hold()
			sent := nc.Stats().OutMsgs
			ctx := context.Background() // no deadline: three attempts
			var check func(*testing.T)
			done := inBackground(func() (err error) {
				check, err = c.call(ctx, lt)
				return err
			})
			eventually(t, c.name+"'s first request written to the connection", func() bool {
				n, err := nc.Buffered()
				return nc.Stats().OutMsgs > sent && err == nil && n == 0
			})
			select {
			case r := <-done:
				t.Fatalf("%s returned (%v) while the path was silent", c.name, r.err)
			case <-time.After(lostHold): // the fault's length
			}
			relay.Release()
			if r := within(t, ctx, c.name, done); r.err != nil {
				t.Fatalf("%s after a silent path: %v", c.name, r.err)
			}
			check(t)
			if c.name != "NewTopic" && c.name != "durable Watch" {
				eventually(t, "the consumer deleted", func() bool { _, all := lt.herald(t); return all == 0 })
			}
		})
	}
}

// silentTopic is a topic of Orders reached through a relay, and the server
// reached directly.
type silentTopic struct {
	name, stream string
	js, direct   jetstream.JetStream
	topic        *natsbridge.Topic[Order]
}

func (lt *silentTopic) herald(t *testing.T) (names []string, all int) {
	t.Helper()
	return (&lossyTopic{direct: lt.direct, stream: lt.stream}).herald(t)
}
