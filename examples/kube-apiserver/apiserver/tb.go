package apiserver

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
)

// tb is the small part of testing.TB the apiserver's test harness needs,
// so that it also runs outside a test (the demo's main).
type tb struct {
	dir string

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	msgs     []string
	tmp      int
}

func newTB(dir string) *tb {
	_ = os.MkdirAll(dir, 0o755)
	return &tb{dir: dir}
}

// run calls f on a goroutine of its own, so that Fatal can end it, and
// reports what failed.
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
		return errors.New(fmt.Sprint(t.msgs))
	}
	return nil
}

// cleanup runs the registered cleanups, last first.
func (t *tb) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (t *tb) Attr(string, string) {}
func (t *tb) Chdir(string)        { panic("apiserver: Chdir is not supported") }
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}
func (t *tb) Error(args ...any) { t.fail(fmt.Sprint(args...)) }
func (t *tb) Errorf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
}
func (t *tb) Fail()    { t.fail("") }
func (t *tb) FailNow() { t.fail(""); runtime.Goexit() }
func (t *tb) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *tb) Fatal(args ...any) { t.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (t *tb) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (t *tb) Helper()                       {}
func (t *tb) Log(...any)                    {}
func (t *tb) Logf(string, ...any)           {}
func (t *tb) Name() string                  { return "herald-apiserver" }
func (t *tb) Setenv(key, value string)      { _ = os.Setenv(key, value) }
func (t *tb) Skip(args ...any)              { t.Fatal(args...) }
func (t *tb) Skipf(format string, a ...any) { t.Fatalf(format, a...) }
func (t *tb) SkipNow()                      { t.FailNow() }
func (t *tb) Skipped() bool                 { return false }
func (t *tb) TempDir() string {
	t.mu.Lock()
	t.tmp++
	d := fmt.Sprintf("%s/tmp%d", t.dir, t.tmp)
	t.mu.Unlock()
	_ = os.MkdirAll(d, 0o755)
	return d
}

func (t *tb) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	if msg != "" {
		t.msgs = append(t.msgs, msg)
	}
}
