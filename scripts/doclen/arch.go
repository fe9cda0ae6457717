package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// checkArchitecture returns every name docs/ARCHITECTURE.md (under root)
// gives in backticks that does not exist: a file or directory path found
// nowhere in the repository; a symbol that a "`file` (`symbol`, …)" or
// "`file`: `symbol`" places in one of redlock's files and that file does
// not name (a file of redlock/internal/master in its section); and, in the
// sections about redlock's insides, an identifier that no Go or Lua file of
// the section's package names. Expressions, key layouts and
// commands in backticks are left alone.
func checkArchitecture(root string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		return nil, err
	}
	files, err := repoFiles(root)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]map[string]words{} // by directory: its files, tests left out
	for _, dir := range []string{"redlock", masterDir} {
		pkgs[dir], err = sources(filepath.Join(root, dir), false)
		if err != nil && !(dir == masterDir && errors.Is(err, fs.ErrNotExist)) {
			return nil, err
		}
	}
	names := &known{root: root, others: map[string]words{}}
	var problems []string
	section, dir := "", "redlock"
	for n, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
			if dir = redlockSections[section]; dir == "" {
				dir = "redlock"
			}
		}
		where := fmt.Sprintf("docs/ARCHITECTURE.md:%d", n+1)
		problems = append(problems, missingFiles(where, line, files)...)
		problems = append(problems, misplaced(where, line, dir, pkgs[dir])...)
		if redlockSections[section] != "" {
			src, err := names.of(dir)
			if err != nil {
				return nil, err
			}
			problems = append(problems, unknownNames(where, line, src, names)...)
		}
	}
	return problems, nil
}

// masterDir is the per-master layer's package, inside redlock.
const masterDir = "redlock/internal/master"

// redlockSections are the sections of docs/ARCHITECTURE.md whose
// identifiers are those of a package of redlock (or qualified by the
// package they belong to), by section: the package's directory.
var redlockSections = map[string]string{
	"Inside `redlock`": "redlock", "Inside `redlock/internal/master`": masterDir,
	"A lock's path": "redlock", "Waits on a node": "redlock", "Where each guarantee lives": "redlock",
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	fileLike   = regexp.MustCompile(`^[\w.-]+(/[\w.-]+)*/?$`)
	fileExt    = regexp.MustCompile(`\.(go|lua|md|sh|ya?ml|json|conf|tmpl|png|mod|jsonl)$`)
	ident      = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)
	// placed is a file followed by the symbols it holds: "`f.go` (`a`, `b`)"
	// or "`f.lua`: `a`".
	placed = regexp.MustCompile("`([\\w.-]+\\.(?:go|lua))`(?: \\(([^)]*)\\)|: (`[^`]+`))")
)

// isPath reports whether a backticked text names a file or a directory.
func isPath(s string) bool {
	return fileLike.MatchString(s) && (fileExt.MatchString(s) || strings.Contains(s, "/"))
}

func missingFiles(where, line string, files []string) []string {
	var problems []string
	for _, m := range backticked.FindAllStringSubmatch(line, -1) {
		if p := m[1]; isPath(p) && !importPath(p) && !exists(p, files) {
			problems = append(problems, fmt.Sprintf("%s: names %s, which is nowhere in the repository", where, p))
		}
	}
	return problems
}

// importPath reports whether p is a Go import path outside the repository:
// a module's (its first element a domain, golang.org/x/sync) or the
// standard library's (database/sql, which has no extension and whose first
// element is one of the library's).
func importPath(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !fileExt.MatchString(p) && (strings.Contains(first, ".") || stdRoots[first])
}

// stdRoots are the first elements of the standard library's import paths
// that docs name with a slash.
var stdRoots = map[string]bool{
	"database": true, "encoding": true, "log": true, "math": true, "net": true, "crypto": true,
	"go": true, "io": true, "path": true, "sync": true, "text": true, "html": true, "runtime": true,
}

// exists reports whether p is a path of the repository, or the end of one
// (a file named relative to its package: `client.go`, `autopipe/overdue.go`).
func exists(p string, files []string) bool {
	p = strings.TrimSuffix(p, "/")
	for _, f := range files {
		if f == p || strings.HasSuffix(f, "/"+p) {
			return true
		}
	}
	return false
}

func misplaced(where, line, dir string, pkg map[string]words) []string {
	var problems []string
	for _, m := range placed.FindAllStringSubmatch(line, -1) {
		src, ok := pkg[m[1]]
		if !ok {
			continue // not one of the package's files: missingFiles judges it
		}
		for _, s := range backticked.FindAllStringSubmatch(m[2]+m[3], -1) {
			name := strings.TrimSuffix(s[1], "()")
			if !ident.MatchString(name) || isPath(name) {
				continue
			}
			if last := name[strings.LastIndex(name, ".")+1:]; !src[last] {
				problems = append(problems, fmt.Sprintf("%s: places %s in %s/%s, which does not name it", where, name, dir, m[1]))
			}
		}
	}
	return problems
}

// known is the words of the packages (tests included) a name was looked
// up in.
type known struct {
	root   string
	others map[string]words // by directory
}

func (k *known) of(dir string) (words, error) {
	if ws, ok := k.others[dir]; ok {
		return ws, nil
	}
	files, err := sources(filepath.Join(k.root, dir), true)
	if err != nil {
		return nil, err
	}
	k.others[dir] = union(files)
	return k.others[dir], nil
}

// unknownNames reports the identifiers of line that src, the words of the
// section's package, does not name (a qualified one: its package's).
func unknownNames(where, line string, src words, k *known) []string {
	var problems []string
	for _, m := range backticked.FindAllStringSubmatch(line, -1) {
		name := strings.TrimSuffix(m[1], "()")
		if !ident.MatchString(name) || isPath(name) {
			continue
		}
		parts := strings.Split(name, ".")
		src := src
		if dir, ok := packageDirs[parts[0]]; ok && len(parts) > 1 {
			other, err := k.of(dir)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", where, name, err))
				continue
			}
			src, parts = other, parts[1:]
		}
		for _, p := range parts {
			if !src[p] {
				problems = append(problems, fmt.Sprintf("%s: names %s, but no file of its package names %s", where, name, p))
				break
			}
		}
	}
	return problems
}

// packageDirs are the repository's packages that a qualified name in the
// redlock sections may start with (`quorum.Round.Run`, `autopipe.Pipe`).
var packageDirs = map[string]string{
	"quorum": "quorum", "clock": "clock", "autopipe": "internal/autopipe", "hashslot": "internal/hashslot",
	"master": masterDir,
}

// words is the set of identifiers a source file names, comments included.
type words map[string]bool

var word = regexp.MustCompile(`\w+`)

// sources returns the words of each Go and Lua file of dir, by file name;
// tests only if tests.
func sources(dir string, tests bool) (map[string]words, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	src := map[string]words{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || (!tests && strings.HasSuffix(n, "_test.go")) || !(strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".lua")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		ws := words{}
		for _, w := range word.FindAllString(string(b), -1) {
			ws[w] = true
		}
		src[n] = ws
	}
	return src, nil
}

// repoFiles lists every file and directory under root, relative to it,
// .git and hidden directories left out.
func repoFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err == nil && rel != "." {
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	return files, err
}

// union is every word of every file of a package.
func union(files map[string]words) words {
	all := words{}
	for _, ws := range files {
		for w := range ws {
			all[w] = true
		}
	}
	return all
}
