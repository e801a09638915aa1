package main

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// verifyNoLeaks fails the run if a goroutine outlived the tests. The
// apiserver and client-go start a few process-wide goroutines that have no
// stop function; they are listed here. None of them runs herald code, so a
// goroutine herald leaked would still be found.
func verifyNoLeaks() int {
	if err := goleak.Find(leakIgnores...); err != nil {
		fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
		return 1
	}
	return 0
}

var leakIgnores = []goleak.Option{
	// client-go's process-wide TLS transport cache starts a certificate
	// rotation loop, with a work queue and a poller, for each client
	// certificate it sees, and never stops it.
	goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).run"),
	goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).processNextWorkItem"),
	goleak.IgnoreTopFunction("k8s.io/client-go/util/workqueue.(*Typed[...]).updateUnfinishedWorkLoop"),
	goleak.IgnoreTopFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
	goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.waitForWithContext"),
	goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntilWithContext.poller.func1.1"),
	// A stopped apiserver's watch cache leaves timers that wake readers
	// up to 3 s later (its blockTimeout); they end on their own.
	goleak.IgnoreTopFunction("k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshAndBlock.func2"),
	// The apiserver's "log" health check starts a wait.Forever loop.
	goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntilWithContext"),
}
