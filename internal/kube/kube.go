// Package kube holds what herald's two Kubernetes adapters (core/v1 and
// events.k8s.io/v1) do alike with client-go's types: building object
// references without letting client-go panic, and calling a sink without
// letting it panic.
package kube

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
