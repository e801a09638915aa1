package natsbridge

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzValidName checks the topic name rule: it never panics, and a name it
// accepts can never read or write another topic's subjects (no wildcard, no
// empty token, no white space) and makes a valid stream name.
func FuzzValidName(f *testing.F) {
	for _, seed := range []string{"orders", "shop.orders.eu-1", "a_b", "", "a..b", ".a", "a.", "a.*", "a.>", "a b", "a\tb", "ü", "$JS.API", "a/b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := validName(name)
		if (err == nil) != (validName(name) == nil) {
			t.Fatalf("validName(%q) is not deterministic", name)
		}
		if err != nil {
			return
		}
		if strings.ContainsAny(name, "*>") || strings.Contains(name, "..") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			t.Fatalf("validName accepted %q, which holds a wildcard or an empty token", name)
		}
		if strings.IndexFunc(name, unicode.IsSpace) >= 0 || len(name) > maxNameLength {
			t.Fatalf("validName accepted %q", name)
		}
		stream := strings.ReplaceAll(name, ".", "_")
		if strings.ContainsAny(stream, ".*> /\\\t\r\n") {
			t.Fatalf("topic %q makes stream name %q, which the server refuses", name, stream)
		}
	})
}
