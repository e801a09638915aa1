package ctrlruntime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// permissionGauges returns the herald_events_permission_missing gauges
// and the check's error counter among metrics.
func permissionGauges(metrics map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range metrics {
		if strings.HasPrefix(k, "herald_events_permission_") {
			out[k] = v
		}
	}
	return out
}

// gauges are the four permission gauges, with missing ones at 1.
func gauges(missing ...string) map[string]float64 {
	out := map[string]float64{"herald_events_permission_check_errors_total{}": 0}
	for _, api := range []string{"core/v1", "events.k8s.io/v1"} {
		for _, verb := range []string{"create", "patch"} {
			out["herald_events_permission_missing{api="+api+",verb="+verb+"}"] = 0
		}
	}
	for _, m := range missing {
		out["herald_events_permission_missing{"+m+"}"] = 1
	}
	return out
}

// TestPermissionCheck: when the manager starts, the Provider asks whether
// it may create and patch events in both API groups; each permission
// missing is one error line with the rule to add, and a gauge at 1.
func TestPermissionCheck(t *testing.T) {
	tests := []struct {
		name       string
		check      ctrlruntime.PermissionCheck
		allowed    func(*authorizationv1.ResourceAttributes) bool
		wantLines  [][]string // the parts of each error line
		wantGauges map[string]float64
	}{
		{
			name:       "both APIs",
			allowed:    func(*authorizationv1.ResourceAttributes) bool { return true },
			wantGauges: gauges(),
		},
		{
			name:    "no patch on events.k8s.io",
			allowed: func(a *authorizationv1.ResourceAttributes) bool { return a.Group == "" || a.Verb != "patch" },
			wantLines: [][]string{{`"api"="events.k8s.io/v1"`, `"verb"="patch"`, `"group"="events.k8s.io"`,
				`"namespaces"="all"`, `// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch"`}},
			wantGauges: gauges("api=events.k8s.io/v1,verb=patch"),
		},
		{
			name:  "core/v1 missing in one of two namespaces",
			check: ctrlruntime.PermissionCheck{Namespaces: []string{"shop", "cart"}},
			allowed: func(a *authorizationv1.ResourceAttributes) bool {
				return a.Group == "events.k8s.io" || a.Namespace == "shop"
			},
			wantLines: [][]string{
				{`"verb"="create"`, `"group"=""`, `"namespaces"="cart"`, `groups=\"\",resources=events,verbs=create;patch,namespace=cart`},
				{`"verb"="patch"`, `"group"=""`, `"namespaces"="cart"`},
			},
			wantGauges: gauges("api=core/v1,verb=create", "api=core/v1,verb=patch"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l logs
			mgr := newManager(t, &l)
			reg := prometheus.NewRegistry()
			_, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(newClient(tc.allowed)), ctrlruntime.WithRegisterer(reg),
				ctrlruntime.WithPermissionCheck(tc.check))
			if err != nil {
				t.Fatal(err)
			}
			stop := run(t, mgr)
			eventually(t, "the check", func() bool { return len(l.matching("Checked the permissions to write events")) == 1 })
			got := permissionGauges(gather(t, reg))
			stop()

			lines := l.matching("Missing RBAC permission to write events")
			if len(lines) != len(tc.wantLines) {
				t.Fatalf("%d lines on missing permissions, want %d:\n%s", len(lines), len(tc.wantLines), strings.Join(lines, "\n"))
			}
			for i, parts := range tc.wantLines {
				for _, part := range parts {
					if !strings.Contains(lines[i], part) {
						t.Errorf("line %d lacks %s:\n%s", i, part, lines[i])
					}
				}
			}
			if diff := cmp.Diff(tc.wantGauges, got); diff != "" {
				t.Errorf("permission metrics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPermissionCheckError: an access review that fails ends the check,
// with one line and a count, and no gauge; the manager runs on.
func TestPermissionCheckError(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	client := newClient(func(*authorizationv1.ResourceAttributes) bool { return true })
	client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	reg := prometheus.NewRegistry()
	if _, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client), ctrlruntime.WithRegisterer(reg)); err != nil {
		t.Fatal(err)
	}
	stop := run(t, mgr)
	eventually(t, "the check's error", func() bool { return len(l.matching("Unable to check the permission")) > 0 })
	got := permissionGauges(gather(t, reg))
	stop()

	if lines := l.matching("Unable to check the permission"); len(lines) != 1 || !strings.Contains(lines[0], "connection refused") {
		t.Errorf("lines on the failed check: %q, want one with the error", lines)
	}
	if diff := cmp.Diff(map[string]float64{"herald_events_permission_check_errors_total{}": 1}, got); diff != "" {
		t.Errorf("permission metrics (-want +got):\n%s", diff)
	}
}

// TestPermissionCheckDisabled: turned off, the check asks nothing.
func TestPermissionCheckDisabled(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	client := newClient(func(*authorizationv1.ResourceAttributes) bool { return false })
	if _, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client), ctrlruntime.WithRegisterer(prometheus.NewRegistry()),
		ctrlruntime.WithPermissionCheck(ctrlruntime.PermissionCheck{Disabled: true})); err != nil {
		t.Fatal(err)
	}
	stop := run(t, mgr)
	stop() // the runnable has returned: a check would have been made before

	for _, a := range client.Actions() {
		if a.GetResource().Resource == "selfsubjectaccessreviews" {
			t.Errorf("disabled check made %v", a)
		}
	}
	if lines := l.matching("RBAC"); len(lines) != 0 {
		t.Errorf("disabled check logged %q", lines)
	}
}

// TestForbiddenIsItsOwnFate: the apiserver refuses core/v1 events with
// 403 Forbidden. Each is counted as failed for reason forbidden, not
// rejected, and not retried; one line says so, for the burst.
func TestForbiddenIsItsOwnFate(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	reg := prometheus.NewRegistry()
	client := newClient(func(*authorizationv1.ResourceAttributes) bool { return true })
	client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group != "" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "",
			errors.New(`User "robot" cannot create resource "events" in API group "" in the namespace "shop"`))
	})
	p, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client), ctrlruntime.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	const n = 3
	for i := range n {
		p.GetEventRecorderFor("a").Event(pod(i), v1.EventTypeNormal, "Synced", "synced")
		p.GetEventRecorder("a").Eventf(pod(i), nil, v1.EventTypeNormal, "Synced", "Sync", "synced")
	}
	eventually(t, "every event's fate", func() bool {
		s := p.Stats()
		return s.Core.FailedForbidden == n && s.Events.Created == n
	})
	got := nonzero(gather(t, reg))
	if s := p.Stats().Core; s.FailedRejected != 0 || s.Retries != 0 {
		t.Errorf("core/v1 Stats = %+v, want no rejected, no retries", s)
	}
	for k, want := range map[string]float64{
		"herald_events_total{api=core/v1,fate=failed}":             n,
		"herald_events_failed_total{api=core/v1,reason=forbidden}": n,
		"herald_events_total{api=events.k8s.io/v1,fate=created}":   n,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if lines := l.matching("Server forbade writing event", `"error"=`); len(lines) != 1 || !strings.Contains(lines[0], "RBAC") {
		t.Errorf("error lines on the forbidden events: %q, want one, for the burst, naming RBAC", lines)
	}
}
