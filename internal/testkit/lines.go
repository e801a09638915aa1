package testkit

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Lines keeps the lines written to its Logger. Its zero value is ready to
// use; it is safe for concurrent use.
type Lines struct {
	mu  sync.Mutex // guards all lines written
	all []string
}

// Logger returns a logger that writes to l, every verbosity included.
func (l *Lines) Logger() logr.Logger {
	return funcr.New(func(_, args string) {
		l.mu.Lock()
		l.all = append(l.all, args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 10})
}

// With returns the lines that contain s, in the order they were written.
func (l *Lines) With(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var got []string
	for _, line := range l.all {
		if strings.Contains(line, s) {
			got = append(got, line)
		}
	}
	return got
}
