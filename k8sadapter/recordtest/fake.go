package recordtest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Strings returns the lines client-go's FakeRecorder would have sent on its
// Events channel for the calls made since New or Reset, one a call, in
// order: "<type> <reason> <message>", then, with Options.IncludeObject, "
// involvedObject{kind=…,apiVersion=…}" from the object's TypeMeta, then
// the annotations if there are any. Calls through EventsRecorder give the
// lines of tools/events' FakeRecorder, "<type> <reason> <note>". A line is
// kept for every call, also those Events shows folded, skipped or with
// Err, as FakeRecorder keeps them.
//
// A test that read FakeRecorder.Events,
//
//	recorder := record.NewFakeRecorder(10)
//	…
//	if got := <-recorder.Events; got != want { … }
//
// reads Strings instead, after Wait if the events come from another
// goroutine:
//
//	recorder := recordtest.New(recordtest.Options{})
//	…
//	if got := recorder.Strings(); !slices.Equal(got, []string{want}) { … }
func (r *Recorder) Strings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.strs...)
}

// fakeLine is the line client-go's record.FakeRecorder sends for a call.
// It formats the type and reason as part of the format, as FakeRecorder
// does.
func fakeLine(o *Options, object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) string {
	line := fmt.Sprintf(eventtype+" "+reason+" "+messageFmt, args...)
	if o.IncludeObject {
		kind, apiVersion := typeMeta(object)
		line += fmt.Sprintf(" involvedObject{kind=%s,apiVersion=%s}", kind, apiVersion)
	}
	if len(annotations) > 0 {
		line += " " + fmt.Sprint(annotations)
	}
	return line
}

// typeMeta returns the kind and API version object's TypeMeta holds, as
// FakeRecorder reads them; both empty for a nil object, where FakeRecorder
// panics.
func typeMeta(object runtime.Object) (kind, apiVersion string) {
	defer func() { _ = recover() }() // a typed nil object
	if object == nil {
		return "", ""
	}
	gvk := object.GetObjectKind().GroupVersionKind()
	return gvk.Kind, gvk.GroupVersion().String()
}
