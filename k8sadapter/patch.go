package k8sadapter

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// appendPatch appends to buf the strategic-merge patch client-go sends for
// a repeated event e, byte for byte, without computing a JSON diff.
//
// client-go builds it with strategicpatch.CreateTwoWayMergePatch(old, new)
// where new is e marshalled to JSON and old is the same event with Count 0,
// LastTimestamp at the Unix epoch and an empty Message. The two documents
// therefore differ in those three fields only, and the patch is an object
// holding, in key order:
//   - "count": e.Count, unless it is 0 (omitted from both documents);
//   - "lastTimestamp": e.LastTimestamp as RFC 3339 seconds in UTC, or null
//     when it is zero, unless it equals the epoch (then nothing differs);
//   - "message": e.Message, unless it is empty (omitted from both).
//
// Values pass through a JSON decode and encode in client-go, so the message
// is encoded as encoding/json encodes a string that was decoded from JSON:
// HTML-escaped, with each invalid UTF-8 byte turned into U+FFFD. A fuzz test
// checks identity with client-go's own computation.
func appendPatch(buf []byte, e *v1.Event) []byte {
	// Room for every field (73 bytes and the message, unless it needs
	// escaping): one allocation at most.
	if need := patchRoom(len(e.Message)); cap(buf)-len(buf) < need {
		buf = append(make([]byte, 0, len(buf)+need), buf...)
	}
	buf = appendPatchHead(buf, e)
	if e.Message != "" {
		buf = appendJSONString(buf, e.Message)
	}
	return append(buf, '}')
}

// appendPatchHead appends to buf the patch of e up to its message: up to
// and with `"message":` if e has one, else all but the closing brace.
func appendPatchHead(buf []byte, e *v1.Event) []byte {
	buf = append(buf, '{')
	sep := false
	if e.Count != 0 {
		buf = append(buf, `"count":`...)
		buf = strconv.AppendInt(buf, int64(e.Count), 10)
		sep = true
	}
	// The epoch side reads "1970-01-01T00:00:00Z": any time in that second
	// marshals the same and so does not differ; the zero time is null.
	if t := e.LastTimestamp.Time; t.IsZero() || t.Unix() != 0 {
		if sep {
			buf = append(buf, ',')
		}
		buf = append(buf, `"lastTimestamp":`...)
		if t.IsZero() {
			buf = append(buf, "null"...)
		} else {
			buf = appendRFC3339(buf, t)
		}
		sep = true
	}
	if e.Message != "" {
		if sep {
			buf = append(buf, ',')
		}
		buf = append(buf, `"message":`...)
	}
	return buf
}

// jsonPlainString reports whether encoding/json writes s as it is:
// printable ASCII but for the bytes it escapes.
func jsonPlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			return false
		}
	}
	return true
}

// appendJSONString appends s as client-go's patch carries it.
func appendJSONString(buf []byte, s string) []byte {
	if jsonPlainString(s) { // the fast path
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"')
	}
	if !utf8.ValidString(s) {
		// Rare: reproduce the decode and encode round trip exactly.
		once, _ := json.Marshal(s)
		var decoded string
		_ = json.Unmarshal(once, &decoded)
		s = decoded
	}
	b, _ := json.Marshal(s)
	return append(buf, b...)
}

// jsonPlain tells the bytes encoding/json writes as they are: printable
// ASCII but for '"', '\\' and the HTML-escaped '<', '>' and '&'.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendRFC3339 appends t as metav1.Time marshals it: quoted RFC 3339 in
// UTC, to the second. Years outside 0-9999 take time's own formatting.
func appendRFC3339(buf []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		buf = append(buf, '"')
		buf = t.AppendFormat(buf, time.RFC3339)
		return append(buf, '"')
	}
	hour, min, sec := t.Clock()
	buf = append(buf, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), 'Z', '"')
	return buf
}

// patchRoom is the room appendPatch needs for the patch of an event whose
// message has n bytes, unless the message needs escaping: 73 bytes for
// the fields, and the message.
func patchRoom(n int) int { return 73 + n }
