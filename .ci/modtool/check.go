package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	next := fs.String("next", "", "also refuse if this release version is below the required one")
	release := fs.String("release", "", "want the required version to be this one")
	fs.Parse(args)
	if fs.NArg() != 0 {
		usage()
	}
	if err := toTop(); err != nil {
		return err
	}
	r, err := load()
	if err != nil {
		return err
	}
	current, err := r.check()
	if err != nil {
		return err
	}
	switch {
	case *next != "":
		if err := validRelease(*next); err != nil {
			return err
		}
		if semver.Compare(*next, current) < 0 {
			return fmt.Errorf("%s is below %s, the version the modules require", *next, current)
		}
	case *release != "" && *release != current:
		return fmt.Errorf("the modules require herald's modules at %s, want %s", current, *release)
	}
	fmt.Println(current)
	return nil
}

// validRelease reports why v cannot be a release version of herald's
// modules, or nil.
func validRelease(v string) error {
	switch {
	case !semver.IsValid(v) || semver.Canonical(v) != v:
		return fmt.Errorf("%q is not a version vX.Y.Z (a pre-release vX.Y.Z-pre allowed)", v)
	case module.IsPseudoVersion(v):
		return fmt.Errorf("%s is a pseudo-version, which no tag makes", v)
	case semver.Major(v) != "v0" && semver.Major(v) != "v1":
		return fmt.Errorf("%s: a major version above v1 needs a /%s suffix on every module path", v, semver.Major(v))
	}
	return nil
}

// check returns the one version at which the modules require herald's
// modules, or every reason the checkout cannot be released as it is.
func (r *repo) check() (string, error) {
	var errs []error
	wanted := map[string][]string{} // version -> where it is required
	required := map[string]bool{}   // herald module paths some module requires
	for _, m := range r.mods {
		for _, rep := range m.file.Replace {
			if r.isHerald(rep.Old.Path) {
				errs = append(errs, fmt.Errorf("%s replaces %s: a consumer's build ignores replace lines, so %s would build only in the checkout (go.work points herald's modules at the checkout)", m.goMod(), rep.Old.Path, m.path))
			}
		}
		for _, req := range r.heraldRequires(m) {
			p, v := req.Mod.Path, req.Mod.Version
			where := fmt.Sprintf("%s requires %s %s", m.goMod(), p, v)
			if r.byPath(p) == nil {
				errs = append(errs, fmt.Errorf("%s, a module the checkout does not have", where))
				continue
			}
			if err := validRelease(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			wanted[v] = append(wanted[v], where)
			required[p] = true
		}
	}
	if len(wanted) > 1 {
		var lines []string
		for _, v := range slices.Sorted(maps.Keys(wanted)) {
			lines = append(lines, wanted[v]...)
		}
		errs = append(errs, fmt.Errorf("the modules require herald's modules at %d versions, want one (they are released together):\n\t%s", len(wanted), strings.Join(lines, "\n\t")))
	}
	if len(wanted) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no module requires another of herald's modules"))
	}
	errs = append(errs, r.checkLicenses()...)
	var current string
	if len(wanted) == 1 {
		current = slices.Collect(maps.Keys(wanted))[0]
		errs = append(errs, r.checkWork(current, required)...)
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return current, nil
}

// checkWork checks go.work: it uses every module of herald's and nothing
// else, and replaces each required module at version v with its directory,
// so that the workspace never asks the module proxy for a version that
// may not be tagged yet.
func (r *repo) checkWork(v string, required map[string]bool) []error {
	wf, err := parseWork()
	if err != nil {
		return []error{fmt.Errorf("go.work: %w", err)}
	}
	var errs []error
	used := map[string]bool{}
	for _, u := range wf.Use {
		dir := path.Clean(u.Path)
		used[dir] = true
		if r.byDir(dir) == nil {
			errs = append(errs, fmt.Errorf("go.work uses %s, which is not one of herald's modules", u.Path))
		}
	}
	for _, m := range r.mods {
		if !used[m.dir] {
			errs = append(errs, fmt.Errorf("go.work does not use %s: add it with go work use %s", m.dir, m.dir))
		}
	}
	replaced := map[string]bool{}
	for _, rep := range wf.Replace {
		if !r.isHerald(rep.Old.Path) {
			continue
		}
		m := r.byPath(rep.Old.Path)
		switch {
		case m == nil:
			errs = append(errs, fmt.Errorf("go.work replaces %s, which is not one of herald's modules", rep.Old.Path))
		case rep.Old.Version != v || rep.New.Version != "" || path.Clean(rep.New.Path) != m.dir:
			errs = append(errs, fmt.Errorf("go.work replaces %s %s => %s %s, want %s %s => %s", rep.Old.Path, rep.Old.Version, rep.New.Path, rep.New.Version, rep.Old.Path, v, dotDir(m.dir)))
		default:
			replaced[rep.Old.Path] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(required)) {
		if !replaced[p] {
			errs = append(errs, fmt.Errorf("go.work lacks replace %s %s => %s: without it the workspace asks the module proxy for that version", p, v, dotDir(r.byPath(p).dir)))
		}
	}
	return errs
}

// checkLicenses checks that every nested module has a copy of the root's
// LICENSE: the go command adds the root's LICENSE to the zip of a nested
// module that has none, which golang.org/x/mod/zip does not, so without a
// copy the zips modtool packs would not be those a module proxy serves.
func (r *repo) checkLicenses() []error {
	root, err := os.ReadFile("LICENSE")
	if err != nil {
		return []error{fmt.Errorf("the repository has no LICENSE: %w", err)}
	}
	var errs []error
	for _, m := range r.nested() {
		name := path.Join(m.dir, "LICENSE")
		if data, err := os.ReadFile(name); err != nil || !bytes.Equal(data, root) {
			errs = append(errs, fmt.Errorf("%s is missing or differs from the root's LICENSE: cp LICENSE %s", name, name))
		}
	}
	return errs
}

// dotDir returns dir as go.work names it.
func dotDir(dir string) string {
	if dir == "." {
		return "."
	}
	return "./" + dir
}

// writeFile replaces the contents of name, keeping its permissions.
func writeFile(name string, data []byte) error {
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	return os.WriteFile(name, data, info.Mode().Perm())
}
