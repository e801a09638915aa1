package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
)

// memberEnv carries a packing replica's description to the process
// that plays it.
const memberEnv = "HERALD_NATS_EXAMPLE_MEMBER"

// memberSpec describes one replica of the packing service.
type memberSpec struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Creds  string `json:"creds"`
	Topic  string `json:"topic"`
	Log    string `json:"log"` // the file every replica appends its handled events to
}

// memberReport is what a replica prints when it stops.
type memberReport struct {
	Handled     uint64 `json:"handled"`
	Redelivered uint64 `json:"redelivered"`
	Rebalances  uint64 `json:"rebalances"`
}

// packingWork is how long the packing handler works on an event.
const packingWork = 10 * time.Millisecond

// memberMain plays the replica described by spec: it joins the packing
// group, says "ready", then "partitions …" each time the group gives it
// other partitions, and handles events until its standard input closes;
// then it shuts down and reports.
func memberMain(spec string, in io.Reader, out io.Writer) int {
	var s memberSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 2
	}
	if err := runMember(s, in, out); err != nil {
		fmt.Fprintf(os.Stderr, "member %s: %v\n", s.Name, err)
		return 1
	}
	return 0
}

// runMember is the packing replica: a member of the group, whose Pool
// handles the orders of the partitions it owns eight at a time, each
// order's events in order, and appends each to the log once done.
func runMember(s memberSpec, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc, js, err := dial(s.Server, s.Creds, "herald-example-packing-"+s.Name)
	if err != nil {
		return err
	}
	defer nc.Close()
	// Not the topic's owner: zero options open it with the partitions it
	// was made with.
	pt, err := natsbridge.NewPartitioned(ctx, js, s.Topic, natsbridge.JSON[Event](), byOrder, natsbridge.PartitionOptions{})
	if err != nil {
		return err
	}
	defer pt.Shutdown(ctx)
	m, err := pt.Join(ctx, "packing", natsbridge.GroupOptions{Member: s.Name, Takeover: takeover})
	if err != nil {
		return err
	}
	log, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	var handled atomic.Uint64
	p := pack(m, log, s.Name, &handled)
	fmt.Fprintln(out, "ready")
	var outMu sync.Mutex
	stop := sayPartitions(m, out, &outMu)
	_, _ = io.Copy(io.Discard, in) // until the example closes it
	stop()
	if err := p.Shutdown(ctx); err != nil {
		return err
	}
	st := m.Stats()
	line, err := json.Marshal(memberReport{Handled: handled.Load(), Redelivered: st.Redelivered, Rebalances: st.Rebalances})
	if err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintln(out, string(line))
	return nil
}

// pack returns the replica's Pool: its handler packs an event, then
// appends it to log and counts it.
func pack(m *natsbridge.Member[Event], log io.Writer, name string, handled *atomic.Uint64) *handle.Pool[Event, string] {
	// The Pool's key is the partition key (Member.Key): one order's events
	// are handled one at a time, in order; different orders at once. It
	// holds few values beyond its handlers': a partition the group gives
	// to another member is handed over once they are done, and the rest
	// stays in the stream for the new owner.
	return handle.New(m, m.Key, func(ctx context.Context, e Event) error {
		time.Sleep(packingWork) // packing the order; a SIGKILL may land here
		if _, err := fmt.Fprintf(log, "%s %d %s\n", e.Order, e.N, name); err != nil {
			return err
		}
		handled.Add(1)
		return nil
	}, handle.Options{Workers: 8, QueueLength: 16})
}

// byOrder is the partition key of the packing topic: the order.
func byOrder(e Event) string { return e.Order }

// sayPartitions prints "partitions …" each time the member's partitions
// change, looking every 20ms, until the returned stop is called.
func sayPartitions(m *natsbridge.Member[Event], out io.Writer, mu *sync.Mutex) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		var last []int
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if parts := m.Stats().Partitions; last == nil || !slices.Equal(parts, last) {
				last = append([]int{}, parts...)
				mu.Lock()
				fmt.Fprintln(out, "partitions", fmt.Sprint(parts))
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-ended }
}
