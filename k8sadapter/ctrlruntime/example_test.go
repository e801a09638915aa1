package ctrlruntime_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// A manager with herald's recorders: one call, and the events a
// controller records are in the apiserver when mgr.Start returns, also
// when the manager stops right after recording them.
func Example() {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"} // a real program: ctrl.GetConfigOrDie()
	mgr, err := manager.New(cfg, manager.Options{Logger: logr.Discard(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		panic(err)
	}
	client := fake.NewClientset() // a real program leaves WithClient out: the manager's config is used

	provider, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client))
	if err != nil {
		panic(err)
	}
	recorder := provider.GetEventRecorder("my-controller") // was: mgr.GetEventRecorder("my-controller")

	ctx, stop := context.WithCancel(context.Background())
	// Stands for a controller: records, then the manager is stopped.
	_ = mgr.Add(manager.RunnableFunc(func(context.Context) error {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
		for range 3 {
			recorder.Eventf(pod, nil, v1.EventTypeWarning, "BackOff", "Restart", "Back-off restarting failed container")
		}
		stop()
		return nil
	}))
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}

	stored, _ := client.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	for _, e := range stored.Items {
		fmt.Println(e.Regarding.Name, e.Reason, e.Note, "series", e.Series.Count)
	}
	s := provider.Stats().Events
	fmt.Println("recorded", s.Recorded, "created", s.Created, "patched", s.Patched, "counted in the series", s.SeriesObserved)
	// Output:
	// web-0 BackOff Back-off restarting failed container series 3
	// recorded 3 created 1 patched 1 counted in the series 1
}
