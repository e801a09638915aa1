package natsbridge

import "testing"

// TestOpenFailureDeletesConsumer: when reading the consumer it has just
// created fails, or panics inside the client, a feed deletes that consumer,
// so that a Watch or Mirror that fails leaves nothing on the server.
// NewTopic's checks keep such a ReadAhead out; it is set here directly.
func TestOpenFailureDeletesConsumer(t *testing.T) {
	ctx, topic := ordersTopic(t)
	var err error
	tests := []struct {
		name      string
		readAhead int
		panics    bool
	}{
		{"client refuses", -1, false},
		{"client panics", 1 << 50, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topic.readAhead = tc.readAhead
			f := newFeed(topic, "watcher", 1, topic.newWatcher(1, WatchOptions{}, nil, nil), nil)
			panicked := true
			func() {
				defer func() { _ = recover() }()
				err = f.open(ctx, consumerName())
				panicked = false
			}()
			if panicked != tc.panics || (!panicked && err == nil) {
				t.Fatalf("open: panicked %v, err %v; want panicked %v, or an error", panicked, err, tc.panics)
			}
			n, l := 0, topic.stream.ListConsumers(ctx)
			for range l.Info() {
				n++
			}
			if err := l.Err(); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d consumers on the server after a failed open, want 0", n)
			}
		})
	}
}

// TestAckSequences reads the stream and delivery sequences from the reply
// subjects the server writes, both forms, as jetstream's Metadata does,
// and refuses anything else.
func TestAckSequences(t *testing.T) {
	tests := []struct {
		reply      string
		sseq, dseq uint64
		ok         bool
	}{
		{"$JS.ACK.ORDERS.c1.1.42.7.1700000000000000000.3", 42, 7, true},
		{"$JS.ACK._.hash123.ORDERS.c1.2.42.7.1700000000000000000.3.rnd", 42, 7, true},
		{"$JS.ACK.dom.hash123.ORDERS.c1.2.42.7.1700000000000000000.3", 42, 7, true},
		{"$JS.ACK.ORDERS.c1.1.x.7.1700000000000000000.3", 0, 0, false},
		{"$JS.ACK.ORDERS.c1.1.42", 0, 0, false},
		{"_INBOX.abc.def", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tc := range tests {
		s, d, ok := ackSequences(tc.reply)
		if s != tc.sseq || d != tc.dseq || ok != tc.ok {
			t.Errorf("ackSequences(%q) = %d, %d, %v; want %d, %d, %v", tc.reply, s, d, ok, tc.sseq, tc.dseq, tc.ok)
		}
	}
}
