package kube_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record/util"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// FuzzEventName checks EventName against client-go's
// util.GenerateEventName (which validates with apimachinery's regular
// expressions): the same name whenever client-go's is not a random UUID,
// and a UUID exactly when client-go falls back to one.
func FuzzEventName(f *testing.F) {
	f.Add("node-1", int64(105999103295324396))
	f.Add("Bad_Name", int64(1))
	f.Add("2001:db8::123", int64(-5))
	f.Add("a..b", int64(0))
	f.Add("-a", int64(7))
	f.Add(strings.Repeat("x", 240), int64(1<<62))
	f.Fuzz(func(t *testing.T, name string, nanos int64) {
		want := util.GenerateEventName(name, nanos)
		got := kube.EventName(name, nanos)
		wantUUID := want != fmt.Sprintf("%s.%x", name, nanos)
		gotUUID := got != fmt.Sprintf("%s.%x", name, nanos)
		if wantUUID != gotUUID || !wantUUID && got != want {
			t.Fatalf("EventName(%q, %d) = %q, client-go %q", name, nanos, got, want)
		}
	})
}

// FuzzGeneratedName checks the rule by which the core/v1 sink's queue
// folds only events the recorder named: IsGeneratedName accepts exactly
// GeneratedName's output, and it is the recorder's
// name (kube.EventName) whenever the recorder's is not a random UUID. A
// name whose boundary between object name and time moves is refused.
func FuzzGeneratedName(f *testing.F) {
	f.Add("web-0", int64(105999103295324396), uint8(1))
	f.Add("a.b", int64(-5), uint8(0))
	f.Add("Bad_Name", int64(16), uint8(3))
	f.Add("", int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, ref string, nanos int64, shift uint8) {
		name := kube.GeneratedName(ref, nanos)
		if !kube.IsGeneratedName(name, ref, nanos) {
			t.Fatalf("kube.IsGeneratedName(%q, %q, %d) = false", name, ref, nanos)
		}
		if rec := kube.EventName(ref, nanos); rec != name && len(rec) != 36 {
			t.Fatalf("the recorder names it %q, GeneratedName %q", rec, name)
		}
		if k := int(shift) % (len(ref) + 1); k > 0 && kube.IsGeneratedName(name, ref[:len(ref)-k], nanos) {
			t.Fatalf("kube.IsGeneratedName(%q, %q, %d) = true", name, ref[:len(ref)-k], nanos)
		}
		if kube.IsGeneratedName(name, ref, nanos+1) || kube.IsGeneratedName(name+"0", ref, nanos) {
			t.Fatalf("kube.IsGeneratedName(%q, %q, ...) accepts another time", name, ref)
		}
	})
}
