package ctrlruntime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultPermissionCheckTimeout bounds the permission check when
// PermissionCheck.Timeout is zero.
const DefaultPermissionCheckTimeout = 10 * time.Second

// PermissionCheck configures the check the Provider makes when the manager
// starts it: may the identity the events are written with create and
// patch events in both APIs (core/v1, API group "", and events.k8s.io/v1,
// API group "events.k8s.io")? Its zero value checks in all namespaces,
// within DefaultPermissionCheckTimeout.
type PermissionCheck struct {
	// Disabled turns the check off.
	Disabled bool
	// Namespaces are the namespaces the check asks about. None means all
	// namespaces, which only a ClusterRole grants: a controller that
	// records events in a few namespaces, with a Role in each, lists them.
	Namespaces []string
	// Timeout bounds the whole check. Zero or less means
	// DefaultPermissionCheckTimeout.
	Timeout time.Duration
}

// eventsResource is the resource both event APIs write.
const eventsResource = "events"

// permission is one of the four the Provider needs: a verb on the events
// of one API.
type permission struct {
	api, group, verb string
}

// needed are the permissions the Provider needs, in the order it checks
// them: create for a first occurrence, patch for a repeat (core/v1) or a
// series (events.k8s.io/v1).
var needed = [...]permission{
	{apiCore, "", "create"}, {apiCore, "", "patch"},
	{apiEvents, "events.k8s.io", "create"}, {apiEvents, "events.k8s.io", "patch"},
}

// permissions is what the check found, for the metrics. The zero value
// is a check not made, or not finished.
type permissions struct {
	mu      sync.Mutex          // guards missing, errors
	missing map[permission]bool // by permission checked: whether it is missing in a namespace asked about
	errors  uint64              // checks cut short by an error of the review
}

// snapshot returns a copy of what the check found.
func (ps *permissions) snapshot() (missing map[permission]bool, errors uint64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	missing = make(map[permission]bool, len(ps.missing))
	for k, v := range ps.missing {
		missing[k] = v
	}
	return missing, ps.errors
}

func (ps *permissions) set(perm permission, missing bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.missing == nil {
		ps.missing = map[permission]bool{}
	}
	ps.missing[perm] = missing
}

func (ps *permissions) failed() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.errors++
}

// checkPermissions asks the apiserver, with a SelfSubjectAccessReview for
// each permission and namespace, whether the Provider's identity may write
// events, logs one error line for each permission missing, with the RBAC
// rule to add, and keeps the outcome for the metrics. It returns within
// the check's timeout, or when ctx ends; a review that fails (the
// apiserver unreachable, the timeout) ends the check, logged once and
// counted, unless ctx ended (the manager stopped meanwhile).
func (p *Provider) checkPermissions(ctx context.Context) {
	c := p.cfg.permissionCheck
	if c.Disabled {
		return
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultPermissionCheckTimeout
	}
	review, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	namespaces := c.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var missing int
	for _, perm := range needed {
		in, err := p.missingIn(review, perm, namespaces)
		if err != nil {
			if ctx.Err() == nil {
				p.perms.failed()
				p.logger.Error(err, "Unable to check the permission to write events", "verb", perm.verb,
					"group", perm.group, "resource", eventsResource, "timeout", timeout)
			}
			return
		}
		p.perms.set(perm, len(in) > 0)
		if len(in) > 0 {
			missing++
			p.logMissing(perm, in)
		}
	}
	p.logger.V(1).Info("Checked the permissions to write events", "missing", missing, "checked", len(needed),
		"namespaces", namespacesValue(c.Namespaces))
}

// missingIn returns the namespaces of namespaces in which the Provider's
// identity lacks perm ("" standing for all namespaces).
func (p *Provider) missingIn(ctx context.Context, perm permission, namespaces []string) ([]string, error) {
	var out []string
	for _, ns := range namespaces {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: perm.verb, Group: perm.group, Resource: eventsResource,
			},
		}}
		got, err := p.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("ctrlruntime: review %s on %s in group %q: %w", perm.verb, eventsResource, perm.group, err)
		}
		if !got.Status.Allowed {
			out = append(out, ns)
		}
	}
	return out, nil
}

// logMissing logs one line for a permission missing in namespaces: what
// is missing, the RBAC rule that grants it, and the kubebuilder marker
// that generates the rule.
func (p *Provider) logMissing(perm permission, namespaces []string) {
	markers := make([]string, len(namespaces))
	for i, ns := range namespaces {
		markers[i] = kubebuilderMarker(perm.group, ns)
	}
	p.logger.Error(nil, "Missing RBAC permission to write events: the apiserver will refuse them with 403 Forbidden; add the rule",
		"api", perm.api, "verb", perm.verb, "group", perm.group, "resource", eventsResource,
		"namespaces", namespacesValue(namespaces),
		"rule", fmt.Sprintf(`{apiGroups: [%q], resources: [%q], verbs: ["create", "patch"]}`, perm.group, eventsResource),
		"kubebuilder", markers)
}

// kubebuilderMarker is the marker from which controller-gen makes the
// rule that lets a controller create and patch events in group: a
// ClusterRole's, or with a namespace a Role's.
func kubebuilderMarker(group, namespace string) string {
	if group == "" {
		group = `""`
	}
	m := "// +kubebuilder:rbac:groups=" + group + ",resources=" + eventsResource + ",verbs=create;patch"
	if namespace != metav1.NamespaceAll {
		m += ",namespace=" + namespace
	}
	return m
}

// namespacesValue is how the log lines name the namespaces checked.
func namespacesValue(namespaces []string) string {
	if len(namespaces) == 0 || len(namespaces) == 1 && namespaces[0] == metav1.NamespaceAll {
		return "all"
	}
	return strings.Join(namespaces, ",")
}
