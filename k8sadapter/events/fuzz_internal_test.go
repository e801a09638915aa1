package events

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzSeriesPatch checks the series patch against client-go's way of
// computing it (a strategic merge diff of the event's JSON without and
// with its series), byte for byte.
func FuzzSeriesPatch(f *testing.F) {
	f.Add(int32(2), int64(1735787105), int64(987654321), 0, "0/3 nodes are available")
	f.Add(int32(20), int64(0), int64(1), 3600, `<"quoted"> & \\`)
	f.Add(int32(-1), int64(-62135596800), int64(0), -7200, "")
	f.Add(int32(1<<31-1), int64(253402300799), int64(999999999), 50400, "\xff")
	f.Fuzz(func(t *testing.T, count int32, sec, nsec int64, offset int, note string) {
		at := time.Unix(sec, nsec).In(time.FixedZone("z", offset%100000))
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0.18ea4cfade9b8953", Namespace: "shop"},
			EventTime:  metav1.MicroTime{Time: at}, Note: note, Reason: "Started", Action: "Starting", Type: "Normal",
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-0"},
			Series:    &eventsv1.EventSeries{Count: count, LastObservedTime: metav1.MicroTime{Time: at}},
		}
		want, werr := diffPatch(ev)
		got, gerr := seriesPatch(ev)
		if (werr != nil) != (gerr != nil) || string(got) != string(want) {
			t.Fatalf("seriesPatch = %s (%v), client-go's way %s (%v)", got, gerr, want, werr)
		}
	})
}
