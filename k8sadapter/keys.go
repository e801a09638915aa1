package k8sadapter

import (
	"hash/maphash"

	v1 "k8s.io/api/core/v1"
)

// key is every correlation key of a core/v1 Event: the exact-repeat key,
// the default group key, the default spam key, and the strings a user's
// CorrelatorOptions.KeyFunc or SpamKeyFunc return (in custom). Each kind
// of key fills the fields client-go concatenates for it and leaves the
// others empty. Being a comparable struct, a key cannot collide across
// field boundaries as client-go's concatenated strings do ("ab"+"c" =
// "a"+"bc").
//
// Keys travel as three functions of the event (see correlation.Keyer): a
// hash, computed once from the hashes of the event's fields (see
// fieldHashes); a match of a stored key against the event's fields; and
// the key itself, built only to be stored. A cache holds keys of one kind
// only (the observations tell event keys from group keys apart), so a
// match compares the fields of its kind only.
type key struct {
	component, host                                   string
	kind, namespace, name, fieldPath, uid, apiVersion string
	eventType, reason, message                        string
	reportingController, reportingInstance            string
	custom                                            string
}

// member tells the events of one group apart: by message for client-go's
// default grouping, by the string a user's KeyFunc returns otherwise. h is
// the hash of s, compared first.
type member struct {
	h uint64
	s string
}

var hashSeed = maphash.MakeSeed()

func hashString(s string) uint64 { return maphash.String(hashSeed, s) }

// emptyHash is the hash of "".
var emptyHash = hashString("")

// fieldHashes are the hashes of the event fields keys are made of, and
// object, the hash of the eight fields every default key shares (the
// source, the object, the type): each key's hash goes on from it.
type fieldHashes struct {
	component, host, kind, namespace, name, fieldPath, uid, apiVersion uint64
	eventType, reason, message, reportingController, reportingInstance uint64
	object                                                             uint64
}

// memo is one field's last string and its hash.
type memo struct {
	s string
	h uint64
}

// hash returns the hash of s, from memory when s is the last string given:
// then the comparison is all it costs, and a string compared with itself
// is equal at once.
func (m *memo) hash(s string) uint64 {
	if m.h != 0 && s == m.s {
		return m.h
	}
	return m.remember(s)
}

// remember is hash's slow path, kept out of line so that hash inlines.
//
//go:noinline
func (m *memo) remember(s string) uint64 {
	m.s, m.h = s, hashString(s)
	return m.h
}

// fieldHasher hashes the key fields of events, remembering each field's
// last string. Consecutive events of one source share most of their
// strings (the source, the object's kind, namespace, name and UID, the
// reason), so most fields cost a comparison instead of a hash. Its zero
// value is ready to use; it is not safe for concurrent use.
type fieldHasher struct {
	component, host, kind, namespace, name, fieldPath, uid, apiVersion memo
	eventType, reason, message, reportingController, reportingInstance memo
}

func (m *fieldHasher) hash(e *v1.Event) fieldHashes {
	o := &e.InvolvedObject
	f := fieldHashes{
		component: m.component.hash(e.Source.Component), host: m.host.hash(e.Source.Host),
		kind: m.kind.hash(o.Kind), namespace: m.namespace.hash(o.Namespace),
		name: m.name.hash(o.Name), fieldPath: m.fieldPath.hash(o.FieldPath),
		uid: m.uid.hash(string(o.UID)), apiVersion: m.apiVersion.hash(o.APIVersion),
		eventType: m.eventType.hash(e.Type), reason: m.reason.hash(e.Reason),
		message: m.message.hash(e.Message), reportingController: m.reportingController.hash(e.ReportingController),
		reportingInstance: m.reportingInstance.hash(e.ReportingInstance),
	}
	f.object = mix(kindObject, f.component, f.host, f.kind, f.namespace, f.name, f.uid, f.apiVersion, f.eventType)
	return f
}

// mix folds field hashes into one, starting from a constant per kind of
// key. Order matters, so that fields cannot trade places.
func mix(kind uint64, fs ...uint64) uint64 {
	h := kind
	for _, f := range fs {
		h = (h ^ f) * 0x9e3779b97f4a7c15
		h ^= h >> 32
	}
	return h
}

// Kinds of key, to start mix from.
const (
	kindEvent uint64 = iota + 1
	kindSpam
	kindGroup
	kindCustomGroup
	kindCustomSpam
	kindObject
)

// eventKey is client-go's getEventKey: what makes two events identical.
func eventKey(e *v1.Event) key {
	o := &e.InvolvedObject
	return key{
		component: e.Source.Component, host: e.Source.Host,
		kind: o.Kind, namespace: o.Namespace, name: o.Name, fieldPath: o.FieldPath,
		uid: string(o.UID), apiVersion: o.APIVersion,
		eventType: e.Type, reason: e.Reason, message: e.Message,
	}
}

// eventHash is the hash of eventKey.
func eventHash(f *fieldHashes) uint64 {
	return mix(kindEvent, f.object, f.fieldPath, f.reason, f.message)
}

// isEventKey reports whether k, an event key, is e's.
func isEventKey(e *v1.Event, k *key) bool {
	o := &e.InvolvedObject
	return k.name == o.Name && k.message == e.Message && k.reason == e.Reason && k.fieldPath == o.FieldPath &&
		k.namespace == o.Namespace && k.uid == string(o.UID) && k.kind == o.Kind && k.apiVersion == o.APIVersion &&
		k.eventType == e.Type && k.component == e.Source.Component && k.host == e.Source.Host
}

// spamKey is client-go's getSpamKey: one token bucket per source and
// object.
func spamKey(e *v1.Event) key {
	o := &e.InvolvedObject
	return key{
		component: e.Source.Component, host: e.Source.Host,
		kind: o.Kind, namespace: o.Namespace, name: o.Name, uid: string(o.UID), apiVersion: o.APIVersion,
		eventType: e.Type,
	}
}

// spamHash is the hash of spamKey.
func spamHash(f *fieldHashes) uint64 {
	return mix(kindSpam, f.object)
}

// isSpamKey reports whether k, a spam key, is e's.
func isSpamKey(e *v1.Event, k *key) bool {
	o := &e.InvolvedObject
	return k.name == o.Name && k.namespace == o.Namespace && k.uid == string(o.UID) && k.kind == o.Kind &&
		k.apiVersion == o.APIVersion && k.eventType == e.Type && k.component == e.Source.Component && k.host == e.Source.Host
}

// groupKey is the group key of client-go's EventAggregatorByReasonFunc:
// events that differ only in message (and field path) form a group; the
// message (see member) tells its members apart.
func groupKey(e *v1.Event) key {
	o := &e.InvolvedObject
	return key{
		component: e.Source.Component, host: e.Source.Host,
		kind: o.Kind, namespace: o.Namespace, name: o.Name, uid: string(o.UID), apiVersion: o.APIVersion,
		eventType: e.Type, reason: e.Reason,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
	}
}

// groupHash is the hash of groupKey.
func groupHash(f *fieldHashes) uint64 {
	return mix(kindGroup, f.object, f.reason, f.reportingController, f.reportingInstance)
}

// isGroupKey reports whether k, a group key, is e's.
func isGroupKey(e *v1.Event, k *key) bool {
	o := &e.InvolvedObject
	return k.name == o.Name && k.reason == e.Reason && k.namespace == o.Namespace && k.uid == string(o.UID) &&
		k.kind == o.Kind && k.apiVersion == o.APIVersion && k.eventType == e.Type &&
		k.component == e.Source.Component && k.host == e.Source.Host &&
		k.reportingController == e.ReportingController && k.reportingInstance == e.ReportingInstance
}

// customHash is the hash of a string from a user's key function, as a key
// of the given kind.
func customHash(kind uint64, s string) uint64 { return mix(kind, hashString(s)) }
