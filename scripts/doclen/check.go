package main

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// docBounds is the longest package doc, in lines of its text, that -check
// accepts for each public package of the root module (and the library's
// satellite modules): redlock's says what a lock is, how one is taken, what
// is promised and the limits; the argument behind it is docs/SAFETY.md's.
// The others are short already; each bound leaves them some room to grow,
// not room to become a second SAFETY.md.
var docBounds = map[string]int{
	"redlock":             150,
	"quorum":              30,
	"clock":               30,
	"fence":               80,
	"history":             80,
	"chaos":               40,
	"redlock/redlocktest": 70,
	"redlock/otelredlock": 90,
}

// pointer matches a doc comment that sends the reader to the package doc
// instead of stating its own contract: "see doc.go, <section>", "(doc.go,
// "Errors")", "See the package doc". A package's own doc.go is the one
// place where the text may live; an exported name's comment says what the
// call does.
var pointer = regexp.MustCompile(`(?i)\bdoc\.go\b|see the package doc|\(package doc\b|the package doc \(`)

// checkAll runs every check on the repository at root: each package of
// docBounds, then docs/ARCHITECTURE.md.
func checkAll(root string) ([]string, error) {
	dirs := make([]string, 0, len(docBounds))
	for d := range docBounds {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var problems []string
	for _, d := range dirs {
		ps, err := checkDocs(root, d, docBounds[d])
		if err != nil {
			return nil, err
		}
		problems = append(problems, ps...)
	}
	ps, err := checkArchitecture(root)
	return append(problems, ps...), err
}

// checkDocs returns what is wrong with the docs of the package in dir
// (relative to root): a package doc over bound lines, and every exported
// name whose comment points at the package doc.
func checkDocs(root, dir string, bound int) ([]string, error) {
	p, err := parseDir(filepath.Join(root, dir))
	if err != nil {
		return nil, err
	}
	var problems []string
	if n := docLines(p.Doc); n > bound {
		problems = append(problems, fmt.Sprintf("%s: package doc is %d lines, over its bound of %d (move the argument to docs/, the contracts to the names)", dir, n, bound))
	}
	for _, e := range commented(p) {
		if loc := pointer.FindStringIndex(e.text); loc != nil {
			problems = append(problems, fmt.Sprintf("%s: the comment of %s points at the package doc (%q): state the contract there", dir, e.name, snippet(e.text, loc)))
		}
	}
	return problems, nil
}

// parseDir reads the package in dir, tests left out, as go doc does.
func parseDir(dir string) (*doc.Package, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	return doc.NewFromFiles(fset, files, "./"+filepath.ToSlash(dir))
}

// docLines counts the lines of a doc comment's text, as go doc prints it
// before its index (blank lines included).
func docLines(text string) int {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0
	}
	return strings.Count(text, "\n") + 1
}

// A comment is one exported name's doc comment.
type comment struct{ name, text string }

// commented lists every exported name of p with its comment's text, in
// name order.
func commented(p *doc.Package) []comment {
	var cs []comment
	forEachDoc(p, func(name, text string) { cs = append(cs, comment{name, text}) })
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

// forEachDoc calls f with every exported name of p and its comment, the
// const and var groups' specs and struct fields included.
func forEachDoc(p *doc.Package, f func(name, text string)) {
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			f(strings.Join(v.Names, ","), v.Doc)
			for _, s := range specTexts(v) {
				f(s.name, s.text)
			}
		}
	}
	funcs := func(prefix string, fs []*doc.Func) {
		for _, fn := range fs {
			f(prefix+fn.Name, fn.Doc)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs("", p.Funcs)
	for _, t := range p.Types {
		f(t.Name, t.Doc)
		for _, m := range memberTexts(t) {
			f(m.name, m.text)
		}
		values(t.Consts)
		values(t.Vars)
		funcs("", t.Funcs)
		funcs(t.Name+".", t.Methods)
	}
}

func snippet(text string, loc []int) string {
	from, to := max(0, loc[0]-30), min(len(text), loc[1]+30)
	return strings.Join(strings.Fields(text[from:to]), " ")
}
