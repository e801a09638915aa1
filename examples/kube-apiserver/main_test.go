package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/heraldgo/herald/examples/kube-apiserver/apiserver"
)

// server is the etcd and kube-apiserver the tests share; each test works
// in namespaces of its own.
var server *apiserver.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withServer{m},
		// The apiserver's "log" health check starts a wait.Forever
		// loop, once per process (healthz.LogHealthz is a package
		// variable), the first time /healthz is asked; nothing stops it.
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.Forever"),
	)
}

// withServer runs the tests with server started, and stops it before
// goleak looks for goroutines left behind.
type withServer struct{ m *testing.M }

func (w withServer) Run() int {
	klog.SetLogger(logr.Discard())    // the apiserver's own logs
	ctrllog.SetLogger(logr.Discard()) // controller-runtime's global logger (the managers' have their own)
	s, err := apiserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start apiserver:", err)
		return 1
	}
	server = s
	defer s.Stop()
	return w.m.Run()
}
