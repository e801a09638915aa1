// Package kube holds what herald's two Kubernetes adapters (core/v1 and
// events.k8s.io/v1) do alike: building object references without letting
// client-go panic, and calling a sink without letting it panic.
package kube

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
)

// Reference is client-go's reference.GetReference, with its panics (on a
// typed nil object, for one) turned into errors.
func Reference(scheme *runtime.Scheme, object runtime.Object) (ref *v1.ObjectReference, err error) {
	defer func() {
		if p := recover(); p != nil {
			ref, err = nil, fmt.Errorf("herald: cannot reference %T: %v", object, p)
		}
	}()
	return reference.GetReference(scheme, object)
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
