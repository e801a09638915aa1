package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
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
	files, err := filesAt(rev, subdir)
	if err != nil {
		return err
	}
	var z bytes.Buffer
	if err := modzip.Create(&z, m, files); err != nil {
		return err
	}
	if err := os.WriteFile(base+".zip", z.Bytes(), 0o666); err != nil {
		return err
	}
	return addToList(filepath.Join(at, "list"), v)
}

// filesAt returns the files of the directory subdir ("" for the root) as
// of rev, as the go command takes them for a module zip from a tag: from
// git archive, with the root's LICENSE if subdir has none. modzip.Create
// leaves out what does not belong in the zip (nested modules, vendor
// directories, irregular files).
func filesAt(rev, subdir string) ([]modzip.File, error) {
	args := []string{"-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", rev}
	if subdir != "" {
		args = append(args, subdir)
	}
	archive, err := git(args...)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(strings.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	haveLicense := false
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		name := f.Name
		if subdir != "" {
			var ok bool
			if name, ok = strings.CutPrefix(f.Name, subdir+"/"); !ok {
				continue
			}
		}
		files = append(files, zipFile{name, f})
		haveLicense = haveLicense || name == "LICENSE"
	}
	if subdir != "" && !haveLicense {
		if license, err := git("cat-file", "blob", rev+":LICENSE"); err == nil {
			files = append(files, dataFile{"LICENSE", []byte(license)})
		}
	}
	return files, nil
}

type zipFile struct {
	name string
	f    *zip.File
}

func (f zipFile) Path() string                 { return f.name }
func (f zipFile) Lstat() (os.FileInfo, error)  { return f.f.FileInfo(), nil }
func (f zipFile) Open() (io.ReadCloser, error) { return f.f.Open() }

type dataFile struct {
	name string
	data []byte
}

func (f dataFile) Path() string                 { return f.name }
func (f dataFile) Lstat() (os.FileInfo, error)  { return dataInfo{f}, nil }
func (f dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type dataInfo struct{ f dataFile }

func (i dataInfo) Name() string       { return path.Base(i.f.name) }
func (i dataInfo) Size() int64        { return int64(len(i.f.data)) }
func (i dataInfo) Mode() os.FileMode  { return 0o644 }
func (i dataInfo) ModTime() time.Time { return time.Time{} }
func (i dataInfo) IsDir() bool        { return false }
func (i dataInfo) Sys() any           { return nil }

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

func sums(args []string) error {
	fs := flag.NewFlagSet("sums", flag.ExitOnError)
	proxy := fs.String("proxy", "", "the proxy's directory")
	fs.Parse(args)
	if *proxy == "" || fs.NArg() != 0 {
		usage()
	}
	r, err := load()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range r.nested() {
		name := path.Join(m.dir, "go.sum")
		data, err := os.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		have := map[string]bool{}
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) != 3 || !r.isHerald(f[0]) {
				continue
			}
			have[f[0]+" "+f[1]] = true
			v, isMod := strings.CutSuffix(f[1], "/go.mod")
			want, err := proxyHash(*proxy, f[0], v, isMod)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %s %s: %w", name, f[0], f[1], err))
			case want != f[2]:
				errs = append(errs, fmt.Errorf("%s: %s %s %s, but the module packed from its tag has %s", name, f[0], f[1], f[2], want))
			}
		}
		for _, req := range r.heraldRequires(m) {
			for _, v := range []string{req.Mod.Version, req.Mod.Version + "/go.mod"} {
				if !have[req.Mod.Path+" "+v] {
					errs = append(errs, fmt.Errorf("%s has no line for %s %s", name, req.Mod.Path, v))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// proxyHash returns the go.sum hash of the module p at version v in the
// proxy: of its go.mod file if isMod, else of its zip file.
func proxyHash(proxy, p, v string, isMod bool) (string, error) {
	escPath, err := module.EscapePath(p)
	if err != nil {
		return "", err
	}
	escVersion, err := module.EscapeVersion(v)
	if err != nil {
		return "", err
	}
	name := filepath.Join(proxy, filepath.FromSlash(escPath), "@v", escVersion+".zip")
	if isMod {
		name = strings.TrimSuffix(name, ".zip") + ".mod"
	}
	if _, err := os.Stat(name); err != nil {
		return "", fmt.Errorf("not in the proxy (is its tag missing?): %w", err)
	}
	if isMod {
		// The go command hashes a go.mod file as a tree of one file.
		return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) { return os.Open(name) })
	}
	return dirhash.HashZip(name, dirhash.Hash1)
}
