// Command generic uses herald's generic packages (broadcast, correlate,
// ratelimit) as a module outside the repository does, with herald got by
// version from a module proxy: .ci/install-check builds and runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/ratelimit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generic:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()

	b := broadcast.New[string](broadcast.Options{})
	w, err := b.Watch()
	if err != nil {
		return err
	}
	if err := b.Publish(ctx, "order 1"); err != nil {
		return err
	}
	if err := b.Shutdown(ctx); err != nil { // delivers what is queued, then closes w
		return err
	}
	var got []string
	for v := range w.All() {
		got = append(got, v)
	}
	if len(got) != 1 || got[0] != "order 1" {
		return fmt.Errorf("watcher got %q, want [order 1]", got)
	}

	c := correlate.New(func(s string) string { return s }, correlate.Options[string, string]{})
	if _, err := c.Correlate("disk full"); err != nil {
		return err
	}
	r, err := c.Correlate("disk full")
	if err != nil {
		return err
	}
	if r.Count != 2 {
		return fmt.Errorf("second Correlate counted %d, want 2", r.Count)
	}

	l := ratelimit.New[string](ratelimit.Options{Limit: 1, Burst: 1})
	now := time.Now()
	if first, second := l.AllowAt("db", now), l.AllowAt("db", now); !first || second {
		return fmt.Errorf("AllowAt twice at once = %v, %v, want true, false", first, second)
	}

	fmt.Printf("broadcast delivered %q; correlate counted %d; ratelimit held back the second call\n", got[0], r.Count)
	return nil
}
