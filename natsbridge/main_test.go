package natsbridge_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests under goleak. A test binary started again by
// TestCrossProcess with roleEnv set plays that role instead (a publisher
// or a watcher in its own process) and exits.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	goleak.VerifyTestMain(m)
}
