// Command ctrlruntime runs a controller-runtime manager with herald's event
// recorders, writing to client-go's fake clientset, as a module outside the
// repository does, with herald got by version from a module proxy:
// .ci/install-check builds and runs it. The manager needs no apiserver: it
// has no controllers and no caches to fill.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ctrlruntime:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"} // never dialled
	mgr, err := manager.New(cfg, manager.Options{Logger: logr.Discard(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	client := fake.NewClientset()
	events, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client))
	if err != nil {
		return err
	}
	recorder := events.GetEventRecorder("install-check") // was: mgr.GetEventRecorder("install-check")

	ctx, stop := context.WithCancel(context.Background())
	// Stands for a controller: records, then stops the manager.
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
		recorder.Eventf(pod, nil, v1.EventTypeWarning, "BackOff", "Restart", "Back-off restarting failed container")
		stop()
		return nil
	})); err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil { // on return, every recorded event is written
		return err
	}

	list, err := client.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) != 1 || list.Items[0].Reason != "BackOff" {
		return fmt.Errorf("the fake apiserver holds %d events, want one BackOff event", len(list.Items))
	}
	fmt.Printf("the manager stopped with its event written: %s %s pod/%s\n", list.Items[0].Type, list.Items[0].Reason, list.Items[0].Regarding.Name)
	return nil
}
