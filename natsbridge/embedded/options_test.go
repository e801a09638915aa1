package embedded_test

// Start's validation of its options.

import (
	"testing"

	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestNegativeMaxPayload: Start returns an error for invalid options. A
// negative MaxPayload would make the server refuse every message.
func TestNegativeMaxPayload(t *testing.T) {
	s, err := embedded.Start(embedded.Options{Dir: t.TempDir(), MaxPayload: -1})
	if err != nil {
		return // refused, as promised
	}
	defer s.Shutdown()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	perr := nc.Publish("x", []byte("hello"))
	t.Errorf("Start(MaxPayload: -1) = nil error; the server's MaxPayload is %d and a 5-byte publish gives %v", nc.MaxPayload(), perr)
}

// TestNegativeReadyTimeout: a negative ReadyTimeout is refused too.
func TestNegativeReadyTimeout(t *testing.T) {
	s, err := embedded.Start(embedded.Options{Dir: t.TempDir(), ReadyTimeout: -1})
	if err == nil {
		s.Shutdown()
		t.Fatal("Start(ReadyTimeout: -1) = nil error")
	}
}
