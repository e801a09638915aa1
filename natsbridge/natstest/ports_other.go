//go:build !unix || solaris

package natstest

// lockPort takes no lock where flock is missing: the binary's own record
// of its ports is all that keeps two servers off one port.
func lockPort(int) (ok bool, release func()) { return true, func() {} }
