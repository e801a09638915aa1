// Command k8sadapter records an event through herald's drop-in event
// broadcaster into client-go's fake clientset, as a module outside the
// repository does, with herald got by version from a module proxy:
// .ci/install-check builds and runs it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "k8sadapter:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	client := fake.NewClientset()
	quiet := klog.NewContext(ctx, logr.Discard())

	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(quiet)) // was: record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "install-check"})

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-web-0"}}
	recorder.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	if err := broadcaster.ShutdownContext(ctx); err != nil { // writes every recorded event
		return err
	}

	list, err := client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) != 1 || list.Items[0].Reason != "BackOff" {
		return fmt.Errorf("the fake apiserver holds %d events, want one BackOff event", len(list.Items))
	}
	e := list.Items[0]
	fmt.Printf("the fake apiserver holds: %s %s pod/%s count %d\n", e.Type, e.Reason, e.InvolvedObject.Name, e.Count)
	return nil
}
