package natsbridge

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// notFoundKV is a bucket without the record asked for.
type notFoundKV struct{ jetstream.KeyValue }

func (notFoundKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, jetstream.ErrKeyNotFound
}

// TestDurableRecordNotFoundIsLostOrNewOrAnError: a record not found is
// lost if the bucket says so (a deletion or purge its last entry, or the
// mark of a bucket made again), new if it says it was never written, and
// an error if the bucket cannot say: taken for new, a record deleted by
// hand would count nothing as redelivered and wait for no lease.
func TestDurableRecordNotFoundIsLostOrNewOrAnError(t *testing.T) {
	k := newKeeper(notFoundKV{}, "d", nil, "", 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer k.g.Stop()
	for _, c := range []struct {
		lost bool
		err  error
		want string
	}{{true, nil, lostOwner}, {false, nil, ""}, {false, context.DeadlineExceeded, "error"}} {
		k.lost = func(context.Context, string) (bool, error) { return c.lost, c.err }
		rec, _, err := k.read(context.Background())
		got := rec.Owner
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("the bucket saying lost %v (%v): read %+v, %v; want %q", c.lost, c.err, rec, err, c.want)
		}
	}
}
