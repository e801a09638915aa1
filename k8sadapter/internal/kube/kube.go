// Package kube holds what herald's two Kubernetes adapters (core/v1 and
// events.k8s.io/v1) do alike with client-go's types: building object
// references without letting client-go panic, naming events, and calling
// a sink without letting it panic.
package kube

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
)

// Reference is client-go's reference.GetReference with every way it can
// fail turned into an error: its panics (a typed nil object), and the nil
// reference it returns without an error for a typed nil
// *v1.ObjectReference. A nil error means a non-nil reference.
func Reference(scheme *runtime.Scheme, object runtime.Object) (ref *v1.ObjectReference, err error) {
	defer func() {
		if p := recover(); p != nil {
			ref, err = nil, fmt.Errorf("herald: cannot reference %T: %v", object, p)
		}
	}()
	ref, err = reference.GetReference(scheme, object)
	if err == nil && ref == nil {
		return nil, fmt.Errorf("herald: cannot reference a nil %T", object)
	}
	return ref, err
}

// SinkPanic reports a sink call that panicked.
type SinkPanic struct{ Value any }

func (p *SinkPanic) Error() string { return fmt.Sprintf("herald: event sink panicked: %v", p.Value) }

// Call runs one sink call, turning a panic into a *SinkPanic error.
func Call[E any](f func() (E, error)) (got E, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero E
			got, err = zero, &SinkPanic{Value: p}
		}
	}()
	return f()
}

// EventName is client-go's util.GenerateEventName without fmt and regular
// expressions: "<name>.<hex nanos>", or a random UUID (client-go's own
// choice) when that is not a valid DNS subdomain name. client-go's
// validation costs more than the rest of recording an event
// (BenchmarkBurst).
func EventName(refName string, unixNano int64) string {
	var room [96]byte // on the stack for most names: the string is the one allocation
	buf := appendGeneratedName(room[:0], refName, unixNano)
	if !isDNS1123Subdomain(buf) {
		return util.GenerateEventName(refName, unixNano)
	}
	return string(buf)
}

// GeneratedName is "<name>.<hex nanos>", the name client-go derives for an
// event from its object's name and a time, unchecked: for a name known to
// be valid (a combined event's, one rebuilt from a valid one).
func GeneratedName(refName string, unixNano int64) string {
	var room [96]byte
	return string(appendGeneratedName(room[:0], refName, unixNano))
}

// IsGeneratedName reports whether name is GeneratedName(refName,
// unixNano), without building it.
func IsGeneratedName(name, refName string, unixNano int64) bool {
	var room [17]byte // a sign and 16 hex digits
	hex := strconv.AppendInt(room[:0], unixNano, 16)
	return len(name) == len(refName)+1+len(hex) && name[:len(refName)] == refName && name[len(refName)] == '.' &&
		name[len(refName)+1:] == string(hex)
}

// appendGeneratedName appends GeneratedName(refName, unixNano) to buf.
func appendGeneratedName(buf []byte, refName string, unixNano int64) []byte {
	buf = append(buf, refName...)
	buf = append(buf, '.')
	return strconv.AppendInt(buf, unixNano, 16)
}

// isDNS1123Subdomain reports whether s is a valid DNS subdomain name as
// apimachinery's validation.IsDNS1123Subdomain checks it: at most 253
// characters, dot-separated labels of lower-case alphanumerics and '-',
// each starting and ending with an alphanumeric.
func isDNS1123Subdomain(s []byte) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		// s[start:i] is a label.
		if i == start || s[start] == '-' || s[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}
