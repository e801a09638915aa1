package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSnapshotSeesAnEditInTheIndexSecond: .ci/snapshot copies a checkout
// with its uncommitted changes, also a change git's index cannot tell by
// the file's size and time: a file rewritten at the same size within the
// second it was added in (git compares whole seconds). The release's
// refusal checks make such an edit (a version v0.1.0 → v0.0.1) and must
// see it in the copy.
func TestSnapshotSeesAnEditInTheIndexSecond(t *testing.T) {
	script, err := filepath.Abs("../snapshot")
	if err != nil {
		t.Fatal(err)
	}
	dir := newRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, ".ci"), 0o777); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, ".ci", "snapshot"), string(data))
	if err := os.Chmod(filepath.Join(dir, ".ci", "snapshot"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The file added at a whole second s, the index written at s+0.7,
	// the file rewritten at the same size at s+0.5: within the index's
	// second, as a fast edit after git add is.
	s := time.Now().Truncate(time.Second).Add(-time.Minute)
	name := filepath.Join(dir, "a", "go.mod")
	setTime(t, name, s)
	gitTest(t, "add", "-A")
	setTime(t, filepath.Join(dir, ".git", "index"), s.Add(700*time.Millisecond))
	writeTestFile(t, name, "module example.com/r/a\n\ngo 1.26\n\nrequire example.com/r v0.0.1\n")
	setTime(t, name, s.Add(500*time.Millisecond))

	out := t.TempDir()
	if b, err := exec.Command(filepath.Join(dir, ".ci", "snapshot"), out).CombinedOutput(); err != nil {
		t.Fatalf(".ci/snapshot: %v: %s", err, b)
	}
	got, err := os.ReadFile(filepath.Join(out, "a", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "module example.com/r/a\n\ngo 1.26\n\nrequire example.com/r v0.0.1\n"; string(got) != want {
		t.Errorf("the copy's a/go.mod:\n%s\nwant the edit:\n%s", got, want)
	}
}

func setTime(t *testing.T, name string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(name, at, at); err != nil {
		t.Fatal(err)
	}
}
