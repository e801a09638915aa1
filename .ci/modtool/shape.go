package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
)

// The limits shape checks: how long a function may be (from its func
// line to its closing brace), and how long a file in the directories
// that hold the machinery (internal packages, natsbridge) may be. Tests
// are exempt.
const (
	maxFuncLines = 50
	maxFileLines = 400
)

// fileLimited reports whether a file at path (slash-separated, relative
// to the root) must stay within maxFileLines.
func fileLimited(path string) bool {
	return strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") ||
		strings.HasPrefix(path, "natsbridge/")
}

// shape checks every Go file git tracks, tests and .ci's own tools
// excepted, against the limits, and lists what is over.
func shape(args []string) error {
	if len(args) != 0 {
		usage()
	}
	if err := toTop(); err != nil {
		return err
	}
	out, err := git("ls-files", "*.go")
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var over []string
	for _, path := range strings.Fields(out) {
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, ".ci/") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); fileLimited(path) && n > maxFileLines {
			over = append(over, fmt.Sprintf("%s: %d lines (at most %d)", path, n, maxFileLines))
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			from, to := fset.Position(fd.Pos()), fset.Position(fd.Body.Rbrace)
			if n := to.Line - from.Line + 1; n > maxFuncLines {
				over = append(over, fmt.Sprintf("%s:%d: func %s: %d lines (at most %d)", path, from.Line, fd.Name.Name, n, maxFuncLines))
			}
		}
	}
	if len(over) > 0 {
		return fmt.Errorf("over the limits:\n\t%s", strings.Join(over, "\n\t"))
	}
	return nil
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
