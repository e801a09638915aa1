package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScrape runs the service on a loopback port, publishes 10 orders and
// scrapes /metrics as Prometheus would: the broadcaster's and the
// correlator's counters are there, under their names, with the counts.
func TestScrape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(ln)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if err := s.publish(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	// Each wanted sample: the metric's name, label pairs it must carry,
	// and its value.
	for _, want := range []struct {
		name   string
		labels []string
		value  string
	}{
		{"messaging_client_sent_messages_total", []string{`messaging_destination_name="orders"`, `messaging_operation_name="publish"`, `messaging_system="herald"`}, "10"},
		{"herald_broadcast_delivered_total", []string{`messaging_destination_name="orders"`}, "10"},
		{"herald_broadcast_queue_depth", []string{`messaging_destination_name="orders"`}, "10"},
		{"herald_broadcast_watchers", []string{`messaging_destination_name="orders"`}, "1"},
		{"herald_correlate_results_total", []string{`herald_correlate_key="new"`, `messaging_destination_name="order-status"`}, "2"},
		{"herald_correlate_results_total", []string{`herald_correlate_key="repeat"`, `messaging_destination_name="order-status"`}, "8"},
	} {
		if !hasSample(string(body), want.name, want.labels, want.value) {
			t.Errorf("/metrics has no sample %s{%s} %s:\n%s", want.name, strings.Join(want.labels, ","), want.value, body)
		}
	}
}

// hasSample reports whether the exposition text has a sample of name whose
// labels include every one of labels, with value.
func hasSample(text, name string, labels []string, value string) bool {
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+"{")
		if !ok {
			continue
		}
		lbls, val, ok := strings.Cut(rest, "} ")
		if !ok || val != value {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(","+lbls+",", ","+l+",")
		}
		if all {
			return true
		}
	}
	return false
}
