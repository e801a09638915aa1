package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// startConfigured runs nats-server (natstest's binary) with JetStream and
// extra lines inside its jetstream block, and returns its URL. The process
// is killed when the test ends.
func startConfigured(t *testing.T, jetstreamExtra string) string {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := fmt.Sprintf("listen: \"127.0.0.1:%d\"\njetstream {\n  store_dir: %q\n%s\n}\n", port, filepath.Join(dir, "store"), jetstreamExtra)
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(natstest.Binary(t), "-c", path)
	out, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		out.Close()
	})
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("server not up: %s", log)
		}
		time.Sleep(20 * time.Millisecond) // polling a port the process opens
	}
	return url
}

// TestNewTopicOwnerReopensUnderDuplicatesLimit: a server whose JetStream
// limits cap the duplicates window (30s). The owner creates its topic with
// MaxMsgs 1000 and Duplicates zero ("the server's default: ... or a lower
// limit set for the account"), then opens it again with the very same
// options, as the owner does at every start. The doc: options that are not
// zero must agree field by field, "a zero field meaning what it means at
// creation". The same options must open the topic.
func TestNewTopicOwnerReopensUnderDuplicatesLimit(t *testing.T) {
	url := startConfigured(t, "  limits { duplicate_window: \"30s\" }")
	_, js := dial(t, url)
	owner := natsbridge.TopicOptions{MaxMsgs: 1000, Logger: quiet}
	first, err := natsbridge.NewTopic(testCtx(t), js, "edge.limits", natsbridge.JSON[Order](), owner)
	if err != nil {
		t.Fatalf("first NewTopic: %v", err)
	}
	defer first.Shutdown(context.Background())
	s, _ := js.Stream(testCtx(t), first.Stream())
	t.Logf("stream made with Duplicates %v", s.CachedInfo().Config.Duplicates)
	again, err := natsbridge.NewTopic(testCtx(t), js, "edge.limits", natsbridge.JSON[Order](), owner)
	if err != nil {
		t.Fatalf("the owner's NewTopic again, same options: %v", err)
	}
	_ = again.Shutdown(context.Background())
}

// TestNewTopicRace: several processes (connections) open one topic
// at once, half with the owner's options and half with other options. The
// stream is made once; each NewTopic either opens it, or returns
// ErrConfigDiffers (never another error), and the stream ends with one of
// the two configurations, consistent with who was refused.
func TestNewTopicRace(t *testing.T) {
	s := startServer(t, embedded.Options{})
	const k = 8
	var jss []jetstream.JetStream
	for range k {
		_, js := connect(t, s)
		jss = append(jss, js)
	}
	for round := range 5 {
		name := fmt.Sprintf("edge.race%d", round)
		var wg sync.WaitGroup
		errs := make([]error, k)
		start := make(chan struct{})
		for i := range k {
			o := natsbridge.TopicOptions{MaxMsgs: 1000, Logger: quiet}
			if i%2 == 1 {
				o.MaxMsgs = 2000
			}
			wg.Go(func() {
				<-start
				topic, err := natsbridge.NewTopic(context.Background(), jss[i], name, natsbridge.JSON[Order](), o)
				errs[i] = err
				if err == nil {
					_ = topic.Shutdown(context.Background())
				}
			})
		}
		close(start)
		wg.Wait()
		st, err := jss[0].Stream(testCtx(t), strings.ReplaceAll(name, ".", "_"))
		if err != nil {
			t.Fatal(err)
		}
		maxMsgs := st.CachedInfo().Config.MaxMsgs
		for i, err := range errs {
			want := int64(1000)
			if i%2 == 1 {
				want = 2000
			}
			switch {
			case err == nil && want != maxMsgs:
				t.Errorf("round %d: NewTopic %d with MaxMsgs %d opened a stream with MaxMsgs %d", round, i, want, maxMsgs)
			case err != nil && !errors.Is(err, natsbridge.ErrConfigDiffers):
				t.Errorf("round %d: NewTopic %d: %v, want nil or ErrConfigDiffers", round, i, err)
			case err != nil && want == maxMsgs:
				t.Errorf("round %d: NewTopic %d with the stream's options refused: %v", round, i, err)
			}
		}
	}
}

// TestNewTopicSchemaUpdateKeepsIdentity: a topic opened with another
// schema is refused, also with Update: an Update changes the stream's
// limits, never the schema it records.
func TestNewTopicSchemaUpdateKeepsIdentity(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	newTopic(t, js, "edge.schema", natsbridge.TopicOptions{Schema: "orders/v1"})
	// The owner updates the stream's limits: the schema stays recorded.
	newTopic(t, js, "edge.schema", natsbridge.TopicOptions{Schema: "orders/v1", MaxMsgs: 10, Update: true})
	_, err := natsbridge.NewTopic(testCtx(t), js, "edge.schema", natsbridge.JSON[Order](), natsbridge.TopicOptions{Schema: "orders/v2", Logger: quiet})
	if !errors.Is(err, natsbridge.ErrTypeMismatch) {
		t.Errorf("NewTopic with schema v2 after an Update = %v, want ErrTypeMismatch", err)
	}
	// An Update by a process with another schema must not rewrite the
	// topic's identity either.
	_, err = natsbridge.NewTopic(testCtx(t), js, "edge.schema", natsbridge.JSON[Order](), natsbridge.TopicOptions{Schema: "orders/v2", MaxMsgs: 20, Update: true, Logger: quiet})
	if !errors.Is(err, natsbridge.ErrTypeMismatch) {
		t.Errorf("Update with schema v2 = %v, want ErrTypeMismatch", err)
	}
	st, _ := js.Stream(testCtx(t), "edge_schema")
	if md := st.CachedInfo().Config.Metadata; md["herald.schema"] != "orders/v1" {
		t.Errorf("the stream's schema is now %q", md["herald.schema"])
	}
}
