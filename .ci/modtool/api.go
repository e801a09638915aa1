package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/mod/modfile"
	"golang.org/x/tools/go/packages"
)

// baselineFile names the revision whose exported API the check compares
// the checkout's with: before the first release a commit, after it the
// last release's tag (.ci/release writes it).
const baselineFile = ".ci/api-baseline"

// An apiChange is one change to a module's exported API, as apidiff
// reports it, with the identifier a CHANGELOG entry names it by.
type apiChange struct {
	ident      string // the package's directory in the repository, a dot, the identifier: broadcast.Stats.Dropped
	message    string // apidiff's message
	compatible bool
}

// api checks that CHANGELOG.md's Unreleased section names every change to
// the exported API of every module of herald's since the baseline.
func api(args []string) error {
	fs := flag.NewFlagSet("api", flag.ExitOnError)
	verbose := fs.Bool("v", false, "list every change, named or not")
	buildFlags := fs.String("buildflags", "", "build flags of the go list that loads the packages, such as -race: the export data of a build with them is reused")
	plain := fs.String("plain", "", "the directories of the modules, comma-separated, loaded without -buildflags (a build without them compiled their dependencies)")
	fs.Parse(args)
	if fs.NArg() != 0 {
		usage()
	}
	flags := apiFlags{build: strings.Fields(*buildFlags)}
	if *plain != "" {
		flags.plain = strings.Split(*plain, ",")
	}
	return checkAPI(os.Stdout, *verbose, flags)
}

// apiFlags are the build flags the API check loads packages with: build,
// but for the modules in the directories plain.
type apiFlags struct {
	build []string
	plain []string
}

// of returns the build flags of the module in dir.
func (f apiFlags) of(dir string) []string {
	if slices.Contains(f.plain, dir) {
		return nil
	}
	return f.build
}

// checkAPI runs the check of api in the repository around the current
// directory, writing its report to w; go list loads the packages with
// flags.
func checkAPI(w io.Writer, verbose bool, flags apiFlags) error {
	if err := toTop(); err != nil {
		return err
	}
	rev, err := readBaseline(baselineFile)
	if err != nil {
		return err
	}
	old, err := os.MkdirTemp("", "herald-api-baseline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(old)
	if err := extract(rev, old); err != nil {
		return err
	}
	if err := alignWork(old); err != nil {
		return err
	}
	r, err := load()
	if err != nil {
		return err
	}
	changes, err := moduleChanges(r, old, ".", flags)
	if err != nil {
		return err
	}
	log, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		return err
	}
	return report(w, rev, changes, unreleased(string(log)), verbose)
}

// readBaseline returns the revision that the file name holds: its first
// line that is not blank or a # comment.
func readBaseline(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s names no revision", name)
}

// extract writes the tree of the revision rev into dir, with git archive.
func extract(rev, dir string) error {
	if _, err := git("rev-parse", "--verify", "-q", rev+"^{commit}"); err != nil {
		return fmt.Errorf("the API baseline %s (%s) is not in this clone: fetch it (git fetch --tags, or --unshallow in a shallow clone): %w", rev, baselineFile, err)
	}
	archive := exec.Command("git", "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	untar.Stderr = os.Stderr
	archive.Stderr = os.Stderr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w", rev, err)
	}
	return untar.Wait()
}

// alignWork writes the go.work of the old tree at oldRoot as the
// checkout's, in the current directory (the repository's root), so that
// both trees select the same versions of their dependencies: the API
// compared is herald's own, not that of a dependency another set of
// modules selects another version of, and the old tree builds on the
// dependencies the checkout built (another selection would build them all
// again). A module the old tree lacks is used from the checkout.
func alignWork(oldRoot string) error {
	wf, err := parseWork()
	if errors.Is(err, os.ErrNotExist) {
		return nil // no workspace: each module selects its own
	}
	if err != nil {
		return err
	}
	here, err := os.Getwd()
	if err != nil {
		return err
	}
	inOld := func(dir string) bool {
		_, err := os.Stat(filepath.Join(oldRoot, dir, "go.mod"))
		return err == nil
	}
	var missing []string // the directories of the modules the old tree lacks
	for _, u := range wf.Use {
		if !inOld(u.Path) {
			missing = append(missing, u.Path)
		}
	}
	for _, dir := range missing {
		if err := wf.DropUse(dir); err != nil {
			return err
		}
		if err := wf.AddUse(filepath.Join(here, dir), ""); err != nil {
			return err
		}
	}
	type local struct{ path, version, dir string }
	var moved []local // replacements by a directory the old tree lacks
	for _, x := range wf.Replace {
		if x.New.Version == "" && !inOld(x.New.Path) {
			moved = append(moved, local{x.Old.Path, x.Old.Version, x.New.Path})
		}
	}
	for _, x := range moved {
		if err := wf.AddReplace(x.path, x.version, filepath.Join(here, x.dir), ""); err != nil {
			return err
		}
	}
	wf.Cleanup()
	if err := os.WriteFile(filepath.Join(oldRoot, "go.work"), modfile.Format(wf.Syntax), 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile("go.work.sum")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(oldRoot, "go.work.sum"), sum, 0o644)
}

// moduleChanges compares, module by module, the exported API of the tree
// in oldRoot with that of the tree in newRoot, which holds the modules of
// r, each loaded with its flags. A module the old tree lacks is compared
// with an empty one.
func moduleChanges(r *repo, oldRoot, newRoot string, flags apiFlags) ([]apiChange, error) {
	var all []apiChange
	for _, m := range r.mods {
		buildFlags := flags.of(m.dir)
		newMod, err := loadAPI(filepath.Join(newRoot, m.dir), m.path, buildFlags)
		if err != nil {
			return nil, err
		}
		oldMod := &apidiff.Module{Path: m.path}
		if _, err := os.Stat(filepath.Join(oldRoot, m.dir, "go.mod")); err == nil {
			if oldMod, err = loadAPI(filepath.Join(oldRoot, m.dir), m.path, buildFlags); err != nil {
				return nil, fmt.Errorf("the baseline's %w", err)
			}
		}
		for _, c := range apidiff.ModuleChanges(oldMod, newMod).Changes {
			all = append(all, apiChange{ident: identOf(m.dir, m.path, c.Message), message: c.Message, compatible: c.Compatible})
		}
	}
	return all, nil
}

// loadAPI type-checks the packages of the module modPath in dir that a
// user can import: not internal, not main, not a test. go list loads them
// with buildFlags.
func loadAPI(dir, modPath string, buildFlags []string) (*apidiff.Module, error) {
	// Each tree is loaded as its own workspace: its go.work, not the
	// GOWORK of the caller (go run with GOWORK=off, as .ci/run starts
	// this tool, would leave the nested modules without the root).
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOWORK=") })
	cfg := &packages.Config{Mode: packages.LoadTypes, Dir: dir, Env: env, BuildFlags: buildFlags}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	mod := &apidiff.Module{Path: modPath}
	var errs []error
	for _, p := range pkgs {
		if p.Name == "main" || isInternal(strings.TrimPrefix(p.PkgPath, modPath)) {
			continue
		}
		for _, e := range p.Errors {
			errs = append(errs, fmt.Errorf("%s: %s", p.PkgPath, e))
		}
		if p.Types != nil {
			mod.Packages = append(mod.Packages, p.Types)
		}
	}
	slices.SortFunc(mod.Packages, func(a, b *types.Package) int { return strings.Compare(a.Path(), b.Path()) })
	return mod, errors.Join(errs...)
}

// isInternal reports whether the module-relative package path rel is
// internal, which no other module can import.
func isInternal(rel string) bool {
	rel = strings.Trim(rel, "/")
	return rel == "internal" || strings.HasPrefix(rel, "internal/") ||
		strings.HasSuffix(rel, "/internal") || strings.Contains(rel, "/internal/")
}

var (
	// typeArgs matches a type's parameter list, [T] or [T, K].
	typeArgs = regexp.MustCompile(`\[[^\]]*\]`)
	// pointerRecv matches a method's pointer receiver, (*T).
	pointerRecv = regexp.MustCompile(`\(\*([^)]*)\)`)
)

// identOf returns the identifier a CHANGELOG entry names the change msg
// by: the package's directory in the repository (its module's directory
// dir, then the package's path in the module), a dot, then the object as
// apidiff names it without pointer receivers or type parameters:
// broadcast.Broadcaster.Watch, natsbridge.Topic.Publisher,
// telemetry/natstelemetry (a package added or removed). The root
// module's root package is herald.
func identOf(dir, modPath, msg string) string {
	obj, _, _ := strings.Cut(msg, ": ")
	if p, ok := strings.CutPrefix(obj, "package "); ok {
		return pkgDir(dir, strings.TrimPrefix(strings.TrimPrefix(p, modPath), "/"))
	}
	obj = pointerRecv.ReplaceAllString(obj, "$1")
	obj = typeArgs.ReplaceAllString(obj, "")
	rel := ""
	switch {
	case strings.HasPrefix(obj, "./"):
		// ./sub/pkg.Name: the last slash-separated element holds the name.
		i := strings.LastIndex(obj, "/")
		j := strings.Index(obj[i:], ".")
		rel, obj = obj[2:i+j], obj[i+j+1:]
	case strings.HasPrefix(obj, modPath+"/"), strings.Contains(obj, "/"):
		return obj // a package outside the module: as apidiff names it
	}
	return pkgDir(dir, rel) + "." + obj
}

// pkgDir returns the repository directory of the package rel of the
// module in dir; herald for the root package of the root module.
func pkgDir(dir, rel string) string {
	d := path.Join(dir, rel)
	if d == "." {
		return "herald"
	}
	return d
}

// unreleased returns the text of the CHANGELOG's Unreleased section: from
// its "## [Unreleased]" heading to the next "## " heading.
func unreleased(log string) string {
	var out strings.Builder
	in := false
	for line := range strings.Lines(log) {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(strings.ToLower(line), "## [unreleased]")
			continue
		}
		if in {
			out.WriteString(line)
		}
	}
	return out.String()
}

// codeSpan matches a Markdown code span.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// names reports whether text names ident in a code span: one that is
// ident, or starts with it followed by neither an identifier's letter nor
// a dot (`telemetry.Publisher(m, name, t, p)` names telemetry.Publisher;
// `broadcast.Stats` does not name broadcast.Stats.Dropped).
func names(text, ident string) bool {
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		span := strings.TrimSpace(m[1])
		rest, ok := strings.CutPrefix(span, ident)
		if !ok {
			continue
		}
		if rest == "" || !strings.ContainsAny(rest[:1], ".abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/") {
			return true
		}
	}
	return false
}

// report writes the changes that section does not name, and returns an
// error if there is one; with verbose, every change.
func report(w io.Writer, rev string, changes []apiChange, section string, verbose bool) error {
	var missing []apiChange
	for _, c := range changes {
		if !names(section, c.ident) {
			missing = append(missing, c)
		} else if verbose {
			fmt.Fprintf(w, "named:   %-50s %s\n", c.ident, c.message)
		}
	}
	if verbose || len(missing) == 0 {
		fmt.Fprintf(w, "%d changes to the exported API since %s, %d not named in CHANGELOG.md's Unreleased section\n", len(changes), rev, len(missing))
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(w, "CHANGELOG.md's Unreleased section does not name these changes to the exported API since %s (%s):\n", rev, baselineFile)
	for _, c := range missing {
		kind := "compatible"
		if !c.compatible {
			kind = "incompatible"
		}
		fmt.Fprintf(w, "  %-50s %-12s %s\n", c.ident, kind, c.message)
	}
	fmt.Fprintln(w, "Name each in an entry under \"## [Unreleased]\", in backticks, as the package's directory in the")
	fmt.Fprintln(w, "repository, a dot and the identifier: `broadcast.Stats.DroppedQueueFull`, `natsbridge.Topic.Publisher`;")
	fmt.Fprintln(w, "a package added or removed by its directory: `telemetry/natstelemetry`.")
	return fmt.Errorf("%d changes to the exported API are not in CHANGELOG.md (above)", len(missing))
}
