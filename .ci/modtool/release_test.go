package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// newRepo makes a git repository of two modules as herald's are laid
// out, a root and a nested one requiring it at v0.1.0 through go.work,
// commits it, and makes it the current directory.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/r\n\ngo 1.26\n",
		"r.go":        "package r\n\nfunc F() {}\n",
		"LICENSE":     "the license\n",
		"a/go.mod":    "module example.com/r/a\n\ngo 1.26\n\nrequire example.com/r v0.1.0\n",
		"a/a.go":      "package a\n\nimport _ \"example.com/r\"\n",
		"a/LICENSE":   "the license\n",
		"a/b/go.mod":  "module example.com/r/a/b\n\ngo 1.26\n\nrequire (\n\texample.com/r v0.1.0\n\texample.com/r/a v0.1.0\n)\n",
		"a/b/b.go":    "package b\n\nimport _ \"example.com/r/a\"\n",
		"a/b/LICENSE": "the license\n",
		"go.work":     "go 1.26\n\nuse (\n\t.\n\t./a\n\t./a/b\n)\n\nreplace (\n\texample.com/r v0.1.0 => .\n\texample.com/r/a v0.1.0 => ./a\n)\n",
	}
	for name, data := range files {
		writeTestFile(t, filepath.Join(dir, name), data)
	}
	t.Chdir(dir)
	gitTest(t, "init", "-q")
	gitTest(t, "add", "-A")
	gitTest(t, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
	return dir
}

func writeTestFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o666); err != nil {
		t.Fatal(err)
	}
}

func gitTest(t *testing.T, args ...string) string {
	t.Helper()
	out, err := git(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheck: a consistent layout passes at its one version; each way a
// release would not install is refused, saying why.
func TestCheck(t *testing.T) {
	dir := newRepo(t)
	load1 := func() *repo {
		t.Helper()
		r, err := load()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if v, err := load1().check(); err != nil || v != "v0.1.0" {
		t.Fatalf("check() = %q, %v; want v0.1.0, nil", v, err)
	}
	tests := []struct {
		name, file, data, want string
	}{
		{"pseudo-version", "a/go.mod", "module example.com/r/a\n\ngo 1.26\n\nrequire example.com/r v0.0.0-00010101000000-000000000000\n", "pseudo-version"},
		{"two versions", "a/go.mod", "module example.com/r/a\n\ngo 1.26\n\nrequire example.com/r v0.0.9\n", "at 2 versions"},
		{"replace", "a/go.mod", "module example.com/r/a\n\ngo 1.26\n\nrequire example.com/r v0.1.0\n\nreplace example.com/r => ../\n", "replaces example.com/r"},
		{"go.work use", "go.work", "go 1.26\n\nuse (\n\t.\n\t./a/b\n)\n\nreplace (\n\texample.com/r v0.1.0 => .\n\texample.com/r/a v0.1.0 => ./a\n)\n", "go.work does not use a"},
		{"go.work replace", "go.work", "go 1.26\n\nuse (\n\t.\n\t./a\n\t./a/b\n)\n\nreplace example.com/r v0.1.0 => .\n", "go.work lacks replace example.com/r/a v0.1.0"},
		{"license", "a/LICENSE", "another license\n", "a/LICENSE is missing or differs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(dir, tc.file)
			old, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(name, old, 0o666)
			writeTestFile(t, name, tc.data)
			if _, err := load1().check(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestBumpAndOrder: bump moves every require of herald's modules and
// go.work's replace lines to the new version, after which check passes
// at it; order puts each module after those it requires.
func TestBumpAndOrder(t *testing.T) {
	dir := newRepo(t)
	writeTestFile(t, filepath.Join(dir, "a/go.sum"), "example.com/r v0.1.0 h1:x=\nexample.com/other v1.0.0 h1:y=\n")
	if err := bump([]string{"v0.2.0"}); err != nil {
		t.Fatal(err)
	}
	r, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := r.check(); err != nil || v != "v0.2.0" {
		t.Errorf("after bump v0.2.0: check() = %q, %v", v, err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "a/go.sum"))
	if string(sum) != "example.com/other v1.0.0 h1:y=\n" {
		t.Errorf("a/go.sum after bump = %q, want only the other module's line", sum)
	}
	mods, err := r.ordered()
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range mods {
		dirs = append(dirs, m.dir)
	}
	if !slices.Equal(dirs, []string{".", "a", "a/b"}) {
		t.Errorf("ordered() = %v, want [. a a/b]", dirs)
	}
}

// TestRelDir: replace lines name a module's directory relative to another.
func TestRelDir(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"a", ".", ".."},
		{"a/b", ".", "../.."},
		{"a/b", "a", "../../a"},
		{".", "a", "./a"},
	} {
		if got, err := relDir(tc.from, tc.to); err != nil || got != tc.want {
			t.Errorf("relDir(%q, %q) = %q, %v; want %q", tc.from, tc.to, got, err, tc.want)
		}
	}
}

// TestPack: the proxy holds each module's list, info, go.mod and zip; a
// nested module's zip has its LICENSE and none of the modules nested in
// it; the go command reads the proxy.
func TestPack(t *testing.T) {
	dir := newRepo(t)
	proxy := filepath.Join(t.TempDir(), "proxy")
	if err := pack([]string{"-o", proxy, "-rev", "HEAD", "-version", "v0.2.0", ".", "a"}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(filepath.Join(proxy, "example.com/r/a/@v/v0.2.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, strings.TrimPrefix(f.Name, "example.com/r/a@v0.2.0/"))
	}
	slices.Sort(names)
	if want := []string{"LICENSE", "a.go", "go.mod"}; !slices.Equal(names, want) {
		t.Errorf("a's zip holds %v, want %v (a/b is a module of its own)", names, want)
	}
	cmd := exec.Command("go", "list", "-m", "-json", "example.com/r/a@v0.2.0")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+proxy, "GONOSUMDB=example.com", "GOFLAGS=-mod=mod -modcacherw", "GOWORK=off",
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"Version": "v0.2.0"`) {
		t.Errorf("go list -m from the proxy: %v\n%s", err, out)
	}
	_ = dir
}
