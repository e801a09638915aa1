package main

import (
	"errors"
	"os"
	"path"
	"strings"

	"golang.org/x/mod/modfile"
)

func bump(args []string) error {
	v, r, err := versionAndRepo(args)
	if err != nil {
		return err
	}
	for _, m := range r.nested() {
		reqs := r.heraldRequires(m)
		if len(reqs) == 0 {
			continue
		}
		for _, req := range reqs {
			if err := m.file.AddRequire(req.Mod.Path, v); err != nil {
				return err
			}
		}
		m.file.Cleanup()
		data, err := m.file.Format()
		if err != nil {
			return err
		}
		if err := writeFile(m.goMod(), data); err != nil {
			return err
		}
		if err := r.dropHeraldSums(path.Join(m.dir, "go.sum")); err != nil {
			return err
		}
	}
	return r.bumpWork(v)
}

// dropHeraldSums removes the lines of herald's modules from the go.sum file
// name: they belong to the version required before, and go mod tidy writes
// those of the new one.
func (r *repo) dropHeraldSums(name string) error {
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []string
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 0 && r.isHerald(f[0]) {
			continue
		}
		kept = append(kept, line)
	}
	return writeFile(name, []byte(strings.Join(kept, "")))
}

// bumpWork moves go.work's replace lines of herald's modules to version v.
func (r *repo) bumpWork(v string) error {
	wf, err := parseWork()
	if err != nil {
		return err
	}
	type rep struct{ path, version, dir string }
	var moved []rep
	for _, x := range wf.Replace {
		if r.isHerald(x.Old.Path) && x.Old.Version != "" && x.Old.Version != v {
			moved = append(moved, rep{x.Old.Path, x.Old.Version, x.New.Path})
		}
	}
	for _, x := range moved {
		// AddReplace puts the new line next to the old one.
		if err := wf.AddReplace(x.path, v, x.dir, ""); err != nil {
			return err
		}
		if err := wf.DropReplace(x.path, x.version); err != nil {
			return err
		}
	}
	wf.Cleanup()
	return writeFile("go.work", modfile.Format(wf.Syntax))
}
