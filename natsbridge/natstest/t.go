package natstest

// T is what natstest needs of a test: *testing.T, *testing.B and
// *testing.F satisfy it, and so can a program's own stand-in (an Example,
// a command that runs a server for a while). Cleanup functions stop every
// server and relay a function started; Fatal and Fatalf must not return.
type T interface {
	Helper()
	Cleanup(f func())
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
}
