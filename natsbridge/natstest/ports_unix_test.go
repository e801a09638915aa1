//go:build unix && !solaris

package natstest

import "testing"

// TestPortLockedAgainstOtherBinaries: a port freePort handed out is
// locked for the test against any other holder of the lock (another
// test binary, which would otherwise start a server on it while this
// test's server is down), until the test ends.
func TestPortLockedAgainstOtherBinaries(t *testing.T) {
	var p int
	t.Run("holder", func(t *testing.T) {
		p = freePort(t)
		if ok, _ := lockPort(p); ok {
			t.Errorf("port %d, handed out, could be locked again", p)
		}
	})
	ok, release := lockPort(p)
	if !ok {
		t.Fatalf("port %d still locked after its test ended", p)
	}
	release()
}
