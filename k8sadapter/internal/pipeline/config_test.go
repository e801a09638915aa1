package pipeline_test

import (
	"testing"
	"time"

	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// TestConfigZeroMeansDefault: both adapters' options share one rule, zero
// means the default; the one spelled "none" is a negative shutdown
// timeout; and the pause between attempts keeps client-go's meaning, zero
// is no pause.
func TestConfigZeroMeansDefault(t *testing.T) {
	c := pipeline.DefaultConfig()
	c.SetMaxTries(0)
	c.SetQueueLength(0)
	c.SetShutdownTimeout(0)
	if c != pipeline.DefaultConfig() {
		t.Errorf("zeros changed the defaults: %+v, want %+v", c, pipeline.DefaultConfig())
	}
	c.SetMaxTries(-3)
	if c.MaxTries != pipeline.DefaultMaxTries {
		t.Errorf("SetMaxTries(-3): MaxTries %d, want the default %d", c.MaxTries, pipeline.DefaultMaxTries)
	}
	c.SetMaxTries(1)
	c.SetShutdownTimeout(-time.Second)
	c.SetSleep(0)
	want := pipeline.Config{Sleep: 0, MaxTries: 1, QueueLength: pipeline.DefaultQueueLength, ShutdownTimeout: 0}
	if c != want {
		t.Errorf("one try, no flush, no pause: %+v, want %+v", c, want)
	}
}
