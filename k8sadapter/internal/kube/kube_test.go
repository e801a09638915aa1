package kube_test

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

func TestReference(t *testing.T) {
	ref, err := kube.Reference(scheme.Scheme, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}})
	if err != nil || ref.Name != "a" || ref.Kind != "Pod" {
		t.Errorf("Reference(pod) = %+v, %v", ref, err)
	}
	for name, obj := range map[string]runtime.Object{
		"nil":                        nil,
		"typed nil *v1.Pod":          (*v1.Pod)(nil),
		"typed nil *ObjectReference": (*v1.ObjectReference)(nil), // client-go returns nil, nil
	} {
		if ref, err := kube.Reference(scheme.Scheme, obj); err == nil || ref != nil {
			t.Errorf("Reference(%s) = %v, %v; want nil and an error", name, ref, err)
		}
	}
}

func TestCall(t *testing.T) {
	if got, err := kube.Call(func() (int, error) { return 7, nil }); got != 7 || err != nil {
		t.Errorf("Call = %d, %v", got, err)
	}
	_, err := kube.Call(func() (int, error) { panic("boom") })
	var p *kube.SinkPanic
	if !errors.As(err, &p) || p.Value != "boom" {
		t.Errorf("Call(panicking) error = %v, want a *SinkPanic", err)
	}
}
