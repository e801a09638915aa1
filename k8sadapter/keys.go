package k8sadapter

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record/util"
)

// key is every correlation key of a core/v1 Event: the exact-repeat key, the
// default group and member keys, the default spam key, and the strings a
// user's CorrelatorOptions.KeyFunc or SpamKeyFunc return (in custom). Each
// kind of key fills the fields client-go concatenates for it and leaves the
// others empty. Being a comparable struct, a key cannot collide across field
// boundaries as client-go's concatenated strings do ("ab"+"c" = "a"+"bc").
type key struct {
	component, host                                   string
	kind, namespace, name, fieldPath, uid, apiVersion string
	eventType, reason, message                        string
	reportingController, reportingInstance            string
	custom                                            string
}

// eventKey is client-go's getEventKey: what makes two events identical.
func eventKey(e *v1.Event) key {
	return key{
		component:  e.Source.Component,
		host:       e.Source.Host,
		kind:       e.InvolvedObject.Kind,
		namespace:  e.InvolvedObject.Namespace,
		name:       e.InvolvedObject.Name,
		fieldPath:  e.InvolvedObject.FieldPath,
		uid:        string(e.InvolvedObject.UID),
		apiVersion: e.InvolvedObject.APIVersion,
		eventType:  e.Type,
		reason:     e.Reason,
		message:    e.Message,
	}
}

// spamKey is client-go's getSpamKey: one token bucket per source and object.
func spamKey(e *v1.Event) key {
	return key{
		component:  e.Source.Component,
		host:       e.Source.Host,
		kind:       e.InvolvedObject.Kind,
		namespace:  e.InvolvedObject.Namespace,
		name:       e.InvolvedObject.Name,
		uid:        string(e.InvolvedObject.UID),
		apiVersion: e.InvolvedObject.APIVersion,
		eventType:  e.Type,
	}
}

// groupByReason is client-go's EventAggregatorByReasonFunc: events that
// differ only in message (and field path) form a group; the message tells
// its members apart.
func groupByReason(e *v1.Event) (group, member key) {
	group = key{
		component:           e.Source.Component,
		host:                e.Source.Host,
		kind:                e.InvolvedObject.Kind,
		namespace:           e.InvolvedObject.Namespace,
		name:                e.InvolvedObject.Name,
		uid:                 string(e.InvolvedObject.UID),
		apiVersion:          e.InvolvedObject.APIVersion,
		eventType:           e.Type,
		reason:              e.Reason,
		reportingController: e.ReportingController,
		reportingInstance:   e.ReportingInstance,
	}
	return group, key{message: e.Message}
}

// eventName is client-go's util.GenerateEventName without fmt and regular
// expressions: "<name>.<hex nanos>", or a random UUID when that is not a
// valid DNS subdomain name.
func eventName(refName string, unixNano int64) string {
	buf := make([]byte, 0, len(refName)+18)
	buf = append(buf, refName...)
	buf = append(buf, '.')
	buf = strconv.AppendInt(buf, unixNano, 16)
	if !isDNS1123Subdomain(buf) {
		// Rare: let client-go pick the UUID, exactly as it would.
		return util.GenerateEventName(refName, unixNano)
	}
	return string(buf)
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
