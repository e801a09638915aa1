package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
)

// purge removes the module cache's copies of herald's modules at version v:
// the extracted module, the downloaded files, and v from the cached list of
// versions. The release scripts call it for a version no tag has made yet,
// so that a copy left by a dry run never stands in for the real one.
func purge(args []string) error {
	v, r, err := versionAndRepo(args)
	if err != nil {
		return err
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return err
	}
	cache := strings.TrimSpace(string(out))
	if cache == "" {
		return errors.New("go env GOMODCACHE is empty")
	}
	escVersion, err := module.EscapeVersion(v)
	if err != nil {
		return err
	}
	for _, m := range r.mods {
		escPath, err := module.EscapePath(m.path)
		if err != nil {
			return err
		}
		// The go command makes an extracted module read-only.
		extracted := filepath.Join(cache, filepath.FromSlash(escPath)+"@"+escVersion)
		err = filepath.WalkDir(extracted, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.Chmod(name, 0o755)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.RemoveAll(extracted); err != nil {
			return err
		}
		at := filepath.Join(cache, "cache", "download", filepath.FromSlash(escPath), "@v")
		files, err := filepath.Glob(filepath.Join(at, escVersion+".*"))
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
		if err := dropFromList(filepath.Join(at, "list"), v); err != nil {
			return err
		}
	}
	return nil
}

// dropFromList removes v from the list of versions in the file name, and
// the file if no version is left.
func dropFromList(name, v string) error {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" && strings.Fields(line)[0] != v {
			kept = append(kept, line)
		}
	}
	if len(kept) == 0 {
		return os.Remove(name)
	}
	return os.WriteFile(name, []byte(strings.Join(kept, "\n")+"\n"), 0o666)
}
