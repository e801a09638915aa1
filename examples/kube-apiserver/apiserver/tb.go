//go:build !herald_external_apiserver

package apiserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// tb is the part of testing.TB that k8s.io/kubernetes' test server needs
// (ktesting.TB), so that it also runs outside a test: in the demo's main,
// and once per process in TestMain. Fatal ends the goroutine that run
// started; logs are discarded (the server logs through klog as well).
type tb struct {
	dir string // holds TempDir's directories

	mu       sync.Mutex // guards the fields below
	cleanups []func()
	msgs     []string
	failed   bool
	tmp      int
}

func newTB(dir string) *tb {
	return &tb{dir: dir}
}

// run calls f on a goroutine of its own, so that Fatal can end it with
// runtime.Goexit, waits for it and reports what failed.
func (t *tb) run(f func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed {
		return errors.New(strings.Join(t.msgs, "; "))
	}
	return nil
}

// cleanup runs the registered cleanups, last first, as testing does.
func (t *tb) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *tb) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	if msg != "" {
		t.msgs = append(t.msgs, msg)
	}
}

func (t *tb) Error(args ...any)                 { t.fail(fmt.Sprint(args...)) }
func (t *tb) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }
func (t *tb) Fail()                             { t.fail("") }
func (t *tb) FailNow()                          { t.fail(""); runtime.Goexit() }
func (t *tb) Fatal(args ...any)                 { t.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (t *tb) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (t *tb) Skip(args ...any)                 { t.Fatal(args...) }
func (t *tb) Skipf(format string, args ...any) { t.Fatalf(format, args...) }
func (t *tb) SkipNow()                         { t.FailNow() }
func (t *tb) Skipped() bool                    { return false }

func (t *tb) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *tb) Attr(string, string) {}
func (t *tb) Helper()             {}
func (t *tb) Log(...any)          {}
func (t *tb) Logf(string, ...any) {}
func (t *tb) Name() string        { return "apiserver" }
func (t *tb) Chdir(string)        { panic("apiserver: Chdir is not supported") }

// Setenv sets an environment variable until cleanup, as testing does.
func (t *tb) Setenv(key, val string) {
	old, had := os.LookupEnv(key)
	if err := os.Setenv(key, val); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	})
}

// TempDir returns a new directory under dir, removed with it.
func (t *tb) TempDir() string {
	t.mu.Lock()
	t.tmp++
	d := filepath.Join(t.dir, fmt.Sprint("tmp", t.tmp))
	t.mu.Unlock()
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
