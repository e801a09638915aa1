package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// copyCheckout copies the checkout as it is into the directory given:
// the files git tracks, with their uncommitted changes, and the untracked
// ones it does not ignore; a tracked file deleted in the checkout is left
// out. The release scripts work on such copies.
func copyCheckout(args []string) error {
	if len(args) != 1 {
		usage()
	}
	dst := args[0]
	out, err := git("ls-files", "-z", "-c", "-o", "--exclude-standard")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(out, "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		info, err := os.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(to), 0o777); err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(name)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(to, name, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(dst, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
