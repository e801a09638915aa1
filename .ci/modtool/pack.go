package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func pack(args []string) error {
	fs := flag.NewFlagSet("pack", flag.ExitOnError)
	out := fs.String("o", "", "the proxy's directory")
	tags := fs.String("tags", "", "pack every module that a tag of this version names")
	rev := fs.String("rev", "", "the commit to pack the modules in the given directories from")
	version := fs.String("version", "", "the version to pack them as")
	fs.Parse(args)
	if *out == "" || (*tags == "") == (*rev == "" || *version == "") {
		usage()
	}
	type item struct{ dir, rev, version string }
	var items []item
	if *tags != "" {
		if fs.NArg() != 0 {
			usage()
		}
		list, err := git("tag", "--list", *tags, "*/"+*tags)
		if err != nil {
			return err
		}
		for _, t := range strings.Fields(list) {
			dir := strings.TrimSuffix(t, "/"+*tags)
			if t == *tags {
				dir = "."
			}
			items = append(items, item{dir, "refs/tags/" + t, *tags})
		}
		if len(items) == 0 {
			return fmt.Errorf("no tag names version %s", *tags)
		}
	} else {
		for _, dir := range fs.Args() {
			items = append(items, item{path.Clean(dir), *rev, *version})
		}
	}
	for _, it := range items {
		if err := packOne(*out, it.dir, it.rev, it.version); err != nil {
			return fmt.Errorf("pack %s at %s: %w", it.dir, it.rev, err)
		}
	}
	return nil
}

// packOne writes the module in dir, as of the commit rev, into the proxy
// in out as version v: the files @v/list, v.info, v.mod and v.zip under
// the module's escaped path.
func packOne(out, dir, rev, v string) error {
	rootMod, err := git("show", rev+":go.mod")
	if err != nil {
		return err
	}
	rootPath := modfile.ModulePath([]byte(rootMod))
	subdir := ""
	if dir != "." {
		subdir = dir
	}
	goMod, err := git("show", rev+":"+path.Join(subdir, "go.mod"))
	if err != nil {
		return err
	}
	modPath := modfile.ModulePath([]byte(goMod))
	if want := path.Join(rootPath, subdir); modPath != want {
		return fmt.Errorf("module %s, want %s (a tag %sv… names the module in %s)", modPath, want, strings.TrimPrefix(subdir+"/", "/"), dir)
	}
	m := module.Version{Path: modPath, Version: v}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	at := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o777); err != nil {
		return err
	}
	base := filepath.Join(at, escVersion)

	when, err := git("log", "-1", "--format=%cI", rev)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(when))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{v, t.UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o666); err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", []byte(goMod), 0o666); err != nil {
		return err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	var z bytes.Buffer
	if err := modzip.CreateFromVCS(&z, m, strings.TrimSpace(top), rev, subdir); err != nil {
		return err
	}
	if err := os.WriteFile(base+".zip", z.Bytes(), 0o666); err != nil {
		return err
	}
	return addToList(filepath.Join(at, "list"), v)
}

// addToList adds v to the proxy's list of versions in the file name.
func addToList(name, v string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, v) {
		versions = append(versions, v)
	}
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o666)
}
