package k8sadapter

import (
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// clientGoPatch is the patch client-go's event logger computes for e.
func clientGoPatch(t testing.TB, e *v1.Event) []byte {
	t.Helper()
	old := *e
	old.Count = 0
	old.LastTimestamp = metav1.NewTime(time.Unix(0, 0))
	old.Message = ""
	newData, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	oldData, err := json.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, e)
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

// FuzzRepeatPatch checks that the patch herald builds by hand is byte for
// byte the one client-go computes with a JSON diff, for any count,
// timestamp and message.
func FuzzRepeatPatch(f *testing.F) {
	f.Add(int32(2), int64(1735787046), int64(0), "hello", "pod-1")
	f.Add(int32(0), int64(0), int64(0), "", "")
	f.Add(int32(-7), int64(0), int64(999), "<b>&</b> \u2028 \xff\xfe", "x")
	f.Add(int32(2147483647), int64(-62135596800), int64(0), "\x00\x1f\"\\", "")
	f.Add(int32(3), int64(253402300800), int64(5), "ünïcødé ✓", "a")
	f.Fuzz(func(t *testing.T, count int32, sec, nsec int64, msg, name string) {
		e := &v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: name},
			Count:          count,
			Message:        msg,
			Reason:         "Reason",
			FirstTimestamp: metav1.NewTime(time.Unix(1, 0)),
		}
		if sec != -62135596800 || nsec != 0 {
			e.LastTimestamp = metav1.NewTime(time.Unix(sec%(1<<36), nsec%int64(time.Second)))
		}
		if _, err := json.Marshal(e); err != nil {
			t.Skip("not marshallable:", err) // years beyond 9999 fail in client-go too
		}
		want := clientGoPatch(t, e)
		if got := appendPatch(nil, e); string(got) != string(want) {
			t.Fatalf("appendPatch = %s\nclient-go   = %s", got, want)
		}
	})
}

// TestAppendRFC3339 compares the hand-made date with time's formatting at
// the edges of the years, the eras and the range it handles, and at
// seconds spread over all of it.
func TestAppendRFC3339(t *testing.T) {
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("east", 5*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	const first, last = -62167219200, 253402300799 // years 0 and 9999
	for sec := int64(first); sec <= last; sec += 7777777 {
		times = append(times, time.Unix(sec, 0))
	}
	for _, tm := range times {
		want := `"` + tm.UTC().Format(time.RFC3339) + `"`
		if got := string(appendRFC3339(nil, tm)); got != want {
			t.Fatalf("appendRFC3339(%v) = %s, want %s", tm, got, want)
		}
	}
}
