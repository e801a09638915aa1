package embedded_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestListensNowhereByDefault starts a server without Listen: it has no
// TCP listener, and in-process connections reach it.
func TestListensNowhereByDefault(t *testing.T) {
	s, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if s.URL() != "" {
		t.Errorf("URL() = %q, want none", s.URL())
	}
	if addr := s.NATS().Addr(); addr != nil {
		t.Errorf("server listens on %v", addr)
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(context.Background()); err != nil {
		t.Fatalf("JetStream over the in-process connection: %v", err)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	tests := []struct {
		listen string
		ok     bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"[::]:0", false},
		{"192.0.2.1:4222", false},
		{"127.0.0.1", false},
		{"127.0.0.1:99999", false},
	}
	for _, tc := range tests {
		t.Run(tc.listen, func(t *testing.T) {
			s, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Listen: tc.listen})
			if !tc.ok {
				if err == nil {
					s.Shutdown()
					t.Fatalf("Start(Listen: %q) succeeded, want an error", tc.listen)
				}
				return
			}
			if err != nil {
				if strings.Contains(tc.listen, "::1") {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatal(err)
			}
			defer s.Shutdown()
			nc, err := nats.Connect(s.URL())
			if err != nil {
				t.Fatalf("connect to %s: %v", s.URL(), err)
			}
			nc.Close()
		})
	}
}

// TestRestartKeepsStreams starts a server again on the same directory: the
// stream and its values are there.
func TestRestartKeepsStreams(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for round := 1; round <= 2; round++ {
		s, err := embedded.Start(embedded.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "kept", Subjects: []string{"kept"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CachedInfo().State.Msgs; got != uint64(round-1) {
			t.Errorf("round %d: stream holds %d values, want %d", round, got, round-1)
		}
		if _, err := js.Publish(ctx, "kept", []byte("v")); err != nil {
			t.Fatal(err)
		}
		nc.Close()
		s.Shutdown()
	}
}

func TestStartNeedsDir(t *testing.T) {
	if _, err := embedded.Start(embedded.Options{}); err == nil {
		t.Fatal("Start without Dir succeeded")
	}
}

// TestLogger passes the server's log lines to a slog.Logger.
func TestLogger(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil)
	s, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "Starting nats-server") {
		t.Errorf("log lacks the server's start:\n%s", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
