package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// The tests below run a manager as a user that has only the RBAC rules a
// test grants it (the apiserver authorizes with RBAC; the tests
// impersonate the user): what ctrlruntime's permission check reports, and
// what becomes of the events the apiserver refuses with 403 Forbidden.

// impersonating returns the shared apiserver's config acting as user, an
// authenticated user in no other group: it may ask access reviews and
// discovery (the roles every authenticated user has), and what the roles
// the tests create grant it.
func impersonating(user string) *rest.Config {
	cfg := rest.CopyConfig(server.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

// grantEvents lets user create and patch events in the API groups: by a
// Role in namespace ns or, if ns is empty, a ClusterRole. It waits until
// the apiserver's authorizer, which learns of roles through a watch,
// allows it.
func grantEvents(t *testing.T, user, ns string, groups ...string) {
	t.Helper()
	if len(groups) == 0 {
		return
	}
	rules := []rbacv1.PolicyRule{{APIGroups: groups, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	meta := metav1.ObjectMeta{Name: user, Namespace: ns}
	rbac, ctx := server.Client.RbacV1(), t.Context()
	var err error
	if ns == "" {
		if _, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}, metav1.CreateOptions{})
		}
		t.Cleanup(func() { // cluster-wide: another run (go test -count) starts afresh
			rbac.ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
			rbac.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
		})
	} else if _, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
		_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("grant %s events in groups %q: %v", user, groups, err)
	}
	eventually(t, "the grant to be in force", func() bool { return allowed(t, user, ns, groups) })
}

// allowed reports whether user may create and patch events in each of
// groups, in namespace ns (all namespaces if empty).
func allowed(t *testing.T, user, ns string, groups []string) bool {
	client, err := kubernetes.NewForConfig(impersonating(user))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, verb := range []string{"create", "patch"} {
			r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: g, Resource: "events"},
			}}
			got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), r, metav1.CreateOptions{})
			if err != nil || !got.Status.Allowed {
				return false
			}
		}
	}
	return true
}

// TestControllerRuntimePermissions runs a manager with herald's Provider
// as users granted (a) only core/v1 events (by a Role in the namespace the
// check is told about), (b) only events.k8s.io events, (c) both, (d) none.
// The permission check logs each permission missing, once, with the rule
// to add, and sets its gauge; the events of an API the user may not write
// are refused with 403 Forbidden, each counted as failed, for reason
// forbidden (not rejected), without a retry, with one error line naming
// the user; those of the other API are stored.
func TestControllerRuntimePermissions(t *testing.T) {
	tests := []struct {
		name       string
		groups     []string // the API groups the user may create and patch events in
		namespaced bool     // granted by a Role in the test's namespace, and checked there
		forbidden  []string // the APIs whose events the apiserver refuses
	}{
		{"core/v1 only, by a Role", []string{""}, true, []string{apiEvents}},
		{"events.k8s.io only", []string{"events.k8s.io"}, false, []string{apiCore}},
		{"both", []string{"", "events.k8s.io"}, false, nil},
		{"none", nil, false, []string{apiCore, apiEvents}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startRestricted(t, tc.groups, tc.namespaced)
			r.checkReport(t, tc.forbidden)
			r.recordAndCheckFates(t, tc.forbidden)
		})
	}
}

// The api label values of herald's metrics.
const (
	apiCore   = "core/v1"
	apiEvents = "events.k8s.io/v1"
)

// restricted is a manager running as a user with only the rules a test
// granted it, with herald's Provider, whose metrics are in reg.
type restricted struct {
	ns, user string
	provider *ctrlruntime.Provider
	reg      *prometheus.Registry
	logs     *managerLogs
	stop     func()
}

// startRestricted creates a namespace and a user granted events in groups
// (by a Role in the namespace if namespaced, else a ClusterRole), starts
// a manager as that user with herald's Provider (its permission check
// told of the namespace if namespaced), and waits for the check.
func startRestricted(t *testing.T, groups []string, namespaced bool) *restricted {
	t.Helper()
	r := &restricted{ns: fmt.Sprintf("rbac-%d", namespaces.Add(1)), reg: prometheus.NewRegistry(), logs: &managerLogs{}}
	r.user = "robot-" + r.ns
	createNamespace(t, r.ns)
	var check ctrlruntime.PermissionCheck
	if namespaced {
		check.Namespaces = []string{r.ns}
		grantEvents(t, r.user, r.ns, groups...)
	} else {
		grantEvents(t, r.user, "", groups...)
	}
	mgr, err := manager.New(impersonating(r.user), manager.Options{
		Logger:  r.logs.logger(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.provider, err = ctrlruntime.New(mgr, ctrlruntime.WithRegisterer(r.reg), ctrlruntime.WithPermissionCheck(check)); err != nil {
		t.Fatal(err)
	}
	r.stop = runManager(t, mgr)
	eventually(t, "the permission check", func() bool { return len(r.logs.matching("Checked the permissions to write events")) == 1 })
	return r
}

// checkReport checks what the permission check reported: a line for each
// permission missing (create and patch on the events of each forbidden
// API), with the rule and its kubebuilder marker, and the gauges.
func (r *restricted) checkReport(t *testing.T, forbidden []string) {
	t.Helper()
	want := map[string]float64{}
	for _, api := range []string{apiCore, apiEvents} {
		for _, verb := range []string{"create", "patch"} {
			want[fmt.Sprintf("api=%q,verb=%q", api, verb)] = 0
			if slices.Contains(forbidden, api) {
				want[fmt.Sprintf("api=%q,verb=%q", api, verb)] = 1
			}
		}
	}
	if diff := cmp.Diff(want, metricValuesIn(t, r.reg, "herald_events_permission_missing")); diff != "" {
		t.Errorf("herald_events_permission_missing (-want +got):\n%s", diff)
	}
	lines := r.logs.matching("Missing RBAC permission to write events")
	if len(lines) != 2*len(forbidden) {
		t.Errorf("%d lines on missing permissions, want %d:\n%s", len(lines), 2*len(forbidden), strings.Join(lines, "\n"))
	}
	for _, api := range forbidden {
		marker := "+kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch"
		if api == apiCore {
			marker = `+kubebuilder:rbac:groups=\"\",resources=events,verbs=create;patch`
		}
		for _, verb := range []string{"create", "patch"} {
			if got := r.logs.matching(`"api"="`+api+`"`, `"verb"="`+verb+`"`, marker); len(got) != 1 {
				t.Errorf("lines on %s %s missing, with the marker %s: %d, want 1", api, verb, marker, len(got))
			}
		}
	}
	if errs := r.logs.matching("Unable to check"); len(errs) != 0 {
		t.Errorf("the check failed: %q", errs)
	}
}

// recordAndCheckFates records n events on each API as the user, and
// checks their fates: those of a forbidden API failed for reason
// forbidden, not retried, with one line naming the user; the others
// stored.
func (r *restricted) recordAndCheckFates(t *testing.T, forbidden []string) {
	t.Helper()
	const n = 5
	core, ev := r.provider.GetEventRecorderFor("robot"), r.provider.GetEventRecorder("robot")
	for i := range n {
		p := pod(r.ns, fmt.Sprint("web-", i))
		core.Eventf(p, v1.EventTypeNormal, "Synced", "Synced web-%d", i)
		ev.Eventf(p, nil, v1.EventTypeNormal, "Synced", "Sync", "Synced web-%d", i)
	}
	eventually(t, "every event's fate", func() bool {
		s := r.provider.Stats()
		return s.Core.Created+s.Core.FailedForbidden == n && s.Events.Created+s.Events.FailedForbidden == n
	})
	failed := metricValuesIn(t, r.reg, "herald_events_failed_total")
	r.stop()

	s := r.provider.Stats()
	stored := map[string]int{apiCore: len(storedOld(t, r.ns)), apiEvents: len(storedNew(t, r.ns))}
	got := map[string][4]uint64{
		apiCore:   {s.Core.Created, s.Core.FailedForbidden, s.Core.FailedRejected, s.Core.Retries},
		apiEvents: {s.Events.Created, s.Events.FailedForbidden, s.Events.FailedRejected, s.Events.Retries},
	}
	for _, api := range []string{apiCore, apiEvents} {
		want, wantStored := [4]uint64{n, 0, 0, 0}, n
		if slices.Contains(forbidden, api) {
			want, wantStored = [4]uint64{0, n, 0, 0}, 0
		}
		if got[api] != want {
			t.Errorf("%s: created, forbidden, rejected, retries = %v, want %v", api, got[api], want)
		}
		if stored[api] != wantStored {
			t.Errorf("%s: %d events stored, want %d", api, stored[api], wantStored)
		}
		if v := failed[fmt.Sprintf("api=%q,reason=%q", api, "forbidden")]; v != float64(n-wantStored) {
			t.Errorf("herald_events_failed_total{api=%q,reason=\"forbidden\"} = %v, want %d", api, v, n-wantStored)
		}
	}
	lines := r.logs.matching("Server forbade writing event", `"error"=`, `User \"`+r.user+`\" cannot create resource \"events\"`)
	if len(lines) != len(forbidden) {
		t.Errorf("%d error lines on the forbidden events, want one per forbidden API (%d):\n%s",
			len(lines), len(forbidden), strings.Join(r.logs.matching("Server forbade"), "\n"))
	}
}
