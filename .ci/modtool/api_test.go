package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestIdentOf: apidiff's messages become the identifiers an entry names,
// in every module and package, without pointer receivers or type
// parameters.
func TestIdentOf(t *testing.T) {
	const root = "github.com/heraldgo/herald"
	tests := []struct {
		dir, modPath, msg, want string
	}{
		{".", root, "./broadcast.(*Broadcaster[T]).WatchWithPrefix: removed", "broadcast.Broadcaster.WatchWithPrefix"},
		{".", root, "./broadcast.Stats.DroppedQueueFull: removed", "broadcast.Stats.DroppedQueueFull"},
		{".", root, "./k8sadapter/events.(*EventBroadcaster).Flush: added", "k8sadapter/events.EventBroadcaster.Flush"},
		{".", root, "./correlate.Correlator[T, K].Peek: added", "correlate.Correlator.Peek"},
		{".", root, "Version: added", "herald.Version"},
		{"natsbridge", root + "/natsbridge", "(*Topic[T]).Publisher: changed from func(PublisherOptions) *Publisher[T] to func(PublisherOptions) (*Publisher[T], error)", "natsbridge.Topic.Publisher"},
		{"natsbridge", root + "/natsbridge", "./embedded.Options.Dir: removed", "natsbridge/embedded.Options.Dir"},
		{"telemetry", root + "/telemetry", "Publisher: removed", "telemetry.Publisher"},
		{"telemetry", root + "/telemetry", "package " + root + "/telemetry/natstelemetry: added", "telemetry/natstelemetry"},
		{".", root, "package " + root + "/handlers: added", "handlers"},
	}
	for _, tc := range tests {
		if got := identOf(tc.dir, tc.modPath, tc.msg); got != tc.want {
			t.Errorf("identOf(%q, %q) = %q, want %q", tc.dir, tc.msg, got, tc.want)
		}
	}
}

// TestNames: a code span names an identifier when it is the identifier or
// a call or signature of it, never when it is a prefix of a longer name.
func TestNames(t *testing.T) {
	tests := []struct {
		text, ident string
		want        bool
	}{
		{"- `broadcast.Stats.DroppedQueueFull` is gone", "broadcast.Stats.DroppedQueueFull", true},
		{"- `telemetry.Publisher(m, name, t, p)`", "telemetry.Publisher", true},
		{"- `natsbridge.Topic.Publisher` → returns an error", "natsbridge.Topic.Publisher", true},
		{"- `broadcast.Stats` changed", "broadcast.Stats.DroppedQueueFull", false},
		{"- `telemetry.PublisherOptions` added", "telemetry.Publisher", false},
		{"- telemetry.Publisher, not in backticks", "telemetry.Publisher", false},
		{"- `telemetry/natstelemetry`, a new package", "telemetry/natstelemetry", true},
		{"- `telemetry` split", "telemetry/natstelemetry", false},
	}
	for _, tc := range tests {
		if got := names(tc.text, tc.ident); got != tc.want {
			t.Errorf("names(%q, %q) = %v, want %v", tc.text, tc.ident, got, tc.want)
		}
	}
}

// TestUnreleased: only the Unreleased section counts, not a release's.
func TestUnreleased(t *testing.T) {
	log := "# Changelog\n\n## [Unreleased]\n- `a.B`\n### x\n- `a.C`\n## [v0.1.0] - 2026-01-01\n- `a.D`\n"
	got := unreleased(log)
	if !names(got, "a.B") || !names(got, "a.C") || names(got, "a.D") {
		t.Errorf("unreleased(...) = %q: want a.B and a.C, not the release's a.D", got)
	}
}

// TestCheckAPI runs the whole check on a repository of two modules: a
// deliberate change the CHANGELOG does not name fails it, saying which
// identifier is missing; once every change is named, it passes.
func TestCheckAPI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	t.Setenv("GOWORK", "")
	t.Setenv("GOFLAGS", "-mod=mod")
	write := func(name, data string) {
		t.Helper()
		name = filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("p/p.go", "package p\n\ntype S struct{ A, B int }\n\nfunc (*S) M() {}\n\nfunc F() {}\n")
	write("internal/q/q.go", "package q\n\nfunc Hidden() {}\n")
	write("cmd/tool/main.go", "package main\n\nfunc Exported() {}\n\nfunc main() {}\n")
	write("sub/go.mod", "module example.com/m/sub\n\ngo 1.26\n")
	write("sub/s.go", "package sub\n\nfunc G() {}\n")
	write("CHANGELOG.md", "# Changelog\n\n## [Unreleased]\n")
	run("git", "init", "-q")
	run("git", "add", "-A")
	run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "baseline")
	write(".ci/api-baseline", "# the baseline\n"+run("git", "rev-parse", "HEAD")+"\n")

	// The changes: a field and a method removed, a function added, a
	// package added in the nested module; internal and main packages
	// change too, which no user can import.
	write("p/p.go", "package p\n\ntype S struct{ A int }\n\nfunc F() {}\n\nfunc New() *S { return nil }\n")
	write("internal/q/q.go", "package q\n")
	write("cmd/tool/main.go", "package main\n\nfunc main() {}\n")
	write("sub/x/x.go", "package x\n")
	write("CHANGELOG.md", "# Changelog\n\n## [Unreleased]\n- `p.New` added.\n- `p.S.B` removed.\n\n## [v0.0.1]\n- `p.S.M` (an old release's entry)\n")
	run("git", "add", "-A")
	t.Chdir(dir)

	var out bytes.Buffer
	err := checkAPI(&out, false, apiFlags{})
	if err == nil {
		t.Fatalf("checkAPI passed with p.S.M and sub/x unnamed:\n%s", &out)
	}
	for _, want := range []string{"p.S.M ", "sub/x "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not name %q as missing:\n%s", want, &out)
		}
	}
	for _, named := range []string{"p.New ", "p.S.B ", "q.Hidden", "Exported"} {
		if strings.Contains(out.String(), named) {
			t.Errorf("the report lists %q, which is named or not importable:\n%s", named, &out)
		}
	}

	write("CHANGELOG.md", "# Changelog\n\n## [Unreleased]\n- `p.New` added.\n- `p.S.B`, `p.S.M` removed.\n- `sub/x`: a new package.\n")
	out.Reset()
	if err := checkAPI(&out, false, apiFlags{}); err != nil {
		t.Fatalf("checkAPI with every change named: %v\n%s", err, &out)
	}
}

// TestAlignWork: the old tree's workspace becomes the checkout's, so that
// both select the same versions: its own modules from the old tree, one it
// lacks (added since the baseline) from the checkout, the checkout's go
// line and go.work.sum.
func TestAlignWork(t *testing.T) {
	here, old := t.TempDir(), t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(here, "go.work"), "go 1.26.6\n\nuse (\n\t.\n\t./sub\n\t./added\n)\n\nreplace example.com/m/added v0.1.0 => ./added\n")
	write(filepath.Join(here, "go.work.sum"), "example.com/dep v1.2.3 h1:x\n")
	write(filepath.Join(old, "go.work"), "go 1.26.0\n\nuse (\n\t.\n\t./sub\n)\n")
	for _, dir := range []string{".", "sub"} {
		write(filepath.Join(old, dir, "go.mod"), "module example.com/m\n")
	}
	t.Chdir(here)
	if err := alignWork(old); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(old, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uses []string
	for _, u := range wf.Use {
		uses = append(uses, u.Path)
	}
	added := filepath.Join(here, "added")
	if want := []string{".", "./sub", added}; !slices.Equal(uses, want) {
		t.Errorf("the old tree's go.work uses %q, want %q", uses, want)
	}
	if wf.Go.Version != "1.26.6" {
		t.Errorf("the old tree's go.work says go %s, want the checkout's 1.26.6", wf.Go.Version)
	}
	if len(wf.Replace) != 1 || wf.Replace[0].New.Path != added {
		t.Errorf("the old tree's go.work replaces %+v, want example.com/m/added by %s", wf.Replace, added)
	}
	if sum, err := os.ReadFile(filepath.Join(old, "go.work.sum")); err != nil || string(sum) != "example.com/dep v1.2.3 h1:x\n" {
		t.Errorf("the old tree's go.work.sum = %q, %v; want the checkout's", sum, err)
	}
}

// TestAPIFlagsPlain: the modules named plain load without the build flags
// (a build without them compiled their dependencies), the others with.
func TestAPIFlagsPlain(t *testing.T) {
	f := apiFlags{build: []string{"-race"}, plain: []string{"examples/kube-apiserver"}}
	if got := f.of("examples/kube-apiserver"); got != nil {
		t.Errorf("flags of a plain module = %q, want none", got)
	}
	if got := f.of("natsbridge"); !slices.Equal(got, []string{"-race"}) {
		t.Errorf("flags of natsbridge = %q, want -race", got)
	}
}
