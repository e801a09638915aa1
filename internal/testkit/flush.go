package testkit

import (
	"context"
	"testing"
	"testing/synctest"
)

// WhileHeld calls flush while a sink holds what (in the caller's
// synctest bubble), checks that flush waits for it, then calls release and
// checks that flush returns nil.
func WhileHeld(t *testing.T, flush func(context.Context) error, release func(), what string) {
	t.Helper()
	done := make(chan error)
	go func() { done <- flush(context.Background()) }()
	synctest.Wait()
	select {
	case err := <-done:
		t.Fatalf("Flush returned %v while the sink held %s", err, what)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Flush = %v", err)
	}
}
