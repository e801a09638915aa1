package kube_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record/util"

	"github.com/heraldgo/herald/internal/kube"
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
