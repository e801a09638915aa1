// Command modtool keeps herald's modules releasable, and their API changes
// listed: the root module and the modules nested in its directories
// (natsbridge, telemetry, k8sadapter/ctrlruntime, the examples), which are
// released together, at one version, with the tags vX.Y.Z (the root) and
// <dir>/vX.Y.Z (the module in <dir>). It does only what no well-kept tool
// does for such a repository: go.work and the requires between herald's
// modules kept at one version, and the changelog check.
//
// It runs in the repository's root directory and knows a module of herald's
// by its path: every go.mod that git tracks whose module path is the root's,
// or the root's followed by the module's directory. .ci/release,
// .ci/install-check and .ci/run call it; it is a module of its own so that
// herald's modules never depend on golang.org/x/mod or x/exp.
//
//	modtool check [-next V] [-release V]
//		Checks that the nested modules require herald's modules at one
//		release version (no pseudo-version such as the placeholder
//		v0.0.0-00010101000000-000000000000), that no go.mod replaces one
//		of herald's modules (a consumer's build ignores replace lines),
//		and that go.work uses every module and points the required
//		version at the checkout. Prints that version. -next V also
//		refuses a V below it; -release V wants it to be V.
//	modtool bump V
//		Moves every require of one of herald's modules, and go.work's
//		replace lines, to V, and removes the lines of herald's modules
//		from the nested go.sum files (go mod tidy writes them again).
//	modtool order [-paths]
//		Prints the modules' directories (or, with -paths, their module
//		paths), each after the modules it requires.
//	modtool pack -o DIR -tags V
//	modtool pack -o DIR -rev REV -version V DIR...
//		Writes the modules into a file-based module proxy in DIR (the
//		layout GOPROXY=file://DIR reads): with -tags, every module that a
//		tag of V names, from that tag; otherwise the modules in the given
//		directories, from the commit REV, as version V. The zip files are
//		those the go command makes from a tag (golang.org/x/mod/zip's
//		CreateFromVCS; every nested module has a LICENSE of its own, as
//		the go command would otherwise add the root's).
//	modtool replace DIR
//		Prints the replace lines that point the herald modules the
//		module in DIR requires at their directories in the checkout,
//		for an alternate go.mod file used with GOWORK=off (.ci/modfiles,
//		.ci/tidy).
//	modtool api [-v] [-buildflags FLAGS] [-plain DIRS]
//		Checks that CHANGELOG.md's Unreleased section names every change
//		to the exported API of every module since the revision in
//		.ci/api-baseline (golang.org/x/exp/apidiff), and lists each one
//		it does not name. Both trees load on the checkout's workspace
//		(the dependency versions it selects); -buildflags (such as
//		-race) makes go list reuse the export data of a build with them,
//		for every module but those in the directories -plain lists.
//
// What well-kept tools do is left to them: the module zips to
// golang.org/x/mod/zip, copies of the checkout to git archive
// (.ci/snapshot), the go.sum lines of a release to the go command (a build
// with -mod=readonly from an empty module cache checks each against the
// release's proxy), the limits on code's shape to revive
// (.ci/revive.toml).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "check":
		err = check(args)
	case "bump":
		err = bump(args)
	case "order":
		err = order(args)
	case "pack":
		err = pack(args)
	case "replace":
		err = replace(args)
	case "api":
		err = api(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: modtool check|bump|order|pack|replace|api [flags] (see the package documentation)")
	os.Exit(2)
}

// A mod is one of herald's modules in the checkout.
type mod struct {
	dir  string // slash-separated, relative to the repository root; "." for the root
	path string // module path
	file *modfile.File
}

// goMod returns the name of the module's go.mod file.
func (m *mod) goMod() string { return path.Join(m.dir, "go.mod") }

// repo holds herald's modules, the root first, then by directory.
type repo struct {
	root string // the root module's path
	mods []*mod
}

// isHerald reports whether p is the path of the root module or of a module
// under it.
func (r *repo) isHerald(p string) bool {
	return p == r.root || strings.HasPrefix(p, r.root+"/")
}

// byPath returns the module with path p, or nil.
func (r *repo) byPath(p string) *mod {
	for _, m := range r.mods {
		if m.path == p {
			return m
		}
	}
	return nil
}

// nested returns the modules other than the root.
func (r *repo) nested() []*mod { return r.mods[1:] }

// load reads the go.mod files git tracks in the current directory, which
// must be the repository's root.
func load() (*repo, error) {
	out, err := git("ls-files", "--", "go.mod", "*/go.mod")
	if err != nil {
		return nil, err
	}
	rootFile, err := parseMod("go.mod")
	if err != nil {
		return nil, err
	}
	r := &repo{root: rootFile.Module.Mod.Path}
	r.mods = append(r.mods, &mod{dir: ".", path: r.root, file: rootFile})
	var errs []error
	for _, name := range strings.Fields(out) {
		dir := path.Dir(name)
		if dir == "." {
			continue
		}
		f, err := parseMod(name)
		if err != nil {
			return nil, err
		}
		p := f.Module.Mod.Path
		if !r.isHerald(p) {
			continue // a tool of the repository's own, such as this one
		}
		if want := r.root + "/" + dir; p != want {
			errs = append(errs, fmt.Errorf("%s: module %s, want %s: the tag %s/vX.Y.Z names the module in %s", name, p, want, dir, dir))
			continue
		}
		r.mods = append(r.mods, &mod{dir: dir, path: p, file: f})
	}
	slices.SortFunc(r.mods[1:], func(a, b *mod) int { return strings.Compare(a.dir, b.dir) })
	return r, errors.Join(errs...)
}

// versionAndRepo takes the one argument of a subcommand, a release
// version, and loads the repository.
func versionAndRepo(args []string) (string, *repo, error) {
	if len(args) != 1 {
		usage()
	}
	v := args[0]
	if err := validRelease(v); err != nil {
		return "", nil, err
	}
	r, err := load()
	return v, r, err
}

func parseMod(name string) (*modfile.File, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(name, data, nil)
}

func parseWork() (*modfile.WorkFile, error) {
	data, err := os.ReadFile("go.work")
	if err != nil {
		return nil, err
	}
	return modfile.ParseWork("go.work", data, nil)
}

// heraldRequires returns m's requirements of herald's modules.
func (r *repo) heraldRequires(m *mod) []*modfile.Require {
	var reqs []*modfile.Require
	for _, req := range m.file.Require {
		if r.isHerald(req.Mod.Path) {
			reqs = append(reqs, req)
		}
	}
	return reqs
}

// ordered returns the modules so that each comes after those it requires,
// the root first.
func (r *repo) ordered() ([]*mod, error) {
	var out []*mod
	done := map[string]bool{}
	for len(out) < len(r.mods) {
		progress := false
		for _, m := range r.mods {
			if done[m.path] {
				continue
			}
			ready := true
			for _, req := range r.heraldRequires(m) {
				if !done[req.Mod.Path] {
					ready = false
				}
			}
			if ready {
				out = append(out, m)
				done[m.path] = true
				progress = true
			}
		}
		if !progress {
			return nil, errors.New("herald's modules require each other in a cycle")
		}
	}
	return out, nil
}

func order(args []string) error {
	fs := flag.NewFlagSet("order", flag.ExitOnError)
	paths := fs.Bool("paths", false, "print the module paths instead of the directories")
	fs.Parse(args)
	if fs.NArg() != 0 {
		usage()
	}
	r, err := load()
	if err != nil {
		return err
	}
	mods, err := r.ordered()
	if err != nil {
		return err
	}
	for _, m := range mods {
		if *paths {
			fmt.Println(m.path)
		} else {
			fmt.Println(m.dir)
		}
	}
	return nil
}

func replace(args []string) error {
	if len(args) != 1 {
		usage()
	}
	r, err := load()
	if err != nil {
		return err
	}
	m := r.byDir(args[0])
	if m == nil {
		return fmt.Errorf("no module of herald's in %s", args[0])
	}
	var lines []string
	for _, req := range r.heraldRequires(m) {
		to := r.byPath(req.Mod.Path)
		if to == nil {
			return fmt.Errorf("%s requires %s, which is not in the checkout", m.goMod(), req.Mod.Path)
		}
		rel, err := relDir(m.dir, to.dir)
		if err != nil {
			return err
		}
		lines = append(lines, req.Mod.Path+" => "+rel)
	}
	switch len(lines) {
	case 0:
	case 1:
		fmt.Printf("replace %s\n", lines[0])
	default:
		fmt.Printf("replace (\n\t%s\n)\n", strings.Join(lines, "\n\t"))
	}
	return nil
}

// byDir returns the module in dir, or nil.
func (r *repo) byDir(dir string) *mod {
	dir = path.Clean(dir)
	for _, m := range r.mods {
		if m.dir == dir {
			return m
		}
	}
	return nil
}

// relDir returns the directory to, relative to from, as a replace line
// wants it (starting with ./ or ../).
func relDir(from, to string) (string, error) {
	if path.IsAbs(from) || path.IsAbs(to) {
		return "", fmt.Errorf("absolute directory %s or %s", from, to)
	}
	up := ""
	if from != "." {
		up = strings.Repeat("../", strings.Count(from, "/")+1)
	}
	rel := path.Clean(up + to)
	if rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
		rel = "./" + rel
	}
	return rel, nil
}

// git runs git with args in the current directory and returns its output.
func git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

// toTop makes the repository's root the current directory, so that a
// command that takes no paths works from anywhere in the checkout (as
// `go run -C .ci/modtool . check` runs it).
func toTop() error {
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	return os.Chdir(strings.TrimSpace(top))
}
