//go:build unix && !solaris

package natstest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// portsDir holds a lock file per port (see lockPort): one directory per
// user, fixed when the package loads, so that a test that changes TMPDIR
// still locks where the other binaries look.
var portsDir = filepath.Join(os.TempDir(), "natstest-ports-"+strconv.Itoa(os.Getuid()))

// lockPort takes a lock on port p that other test binaries on this
// machine see (go test runs the binaries of several packages at once,
// each with its own servers): it reports false if one of them holds it.
// The lock is a flock on a file per port, held until release is called or
// the process ends, however it ends. Where no lock can be taken (the
// directory unusable, a file system without flock), it reports true: the
// binary's own record of its ports still holds.
func lockPort(p int) (ok bool, release func()) {
	if err := os.MkdirAll(portsDir, 0o700); err != nil {
		return true, func() {}
	}
	f, err := os.OpenFile(filepath.Join(portsDir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return true, func() {}
	}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return false, nil
	case err != nil:
		f.Close()
		return true, func() {}
	}
	return true, func() { f.Close() }
}
