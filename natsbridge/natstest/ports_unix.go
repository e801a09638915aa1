//go:build unix

package natstest

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// lockPort takes a lock on port p that other test binaries on this
// machine see (go test runs the binaries of several packages at once,
// each with its own servers): it reports false if one of them holds it.
// The lock is a flock on a file per port in a shared directory, held
// until release is called or the process ends, however it ends. Where
// the directory cannot be used (another user's), it takes no lock and
// reports true: the binary's own record of its ports still holds.
func lockPort(p int) (ok bool, release func()) {
	dir := filepath.Join(os.TempDir(), "natstest-ports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true, func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return true, func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false, nil
	}
	return true, func() { f.Close() }
}
