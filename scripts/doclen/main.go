// Command doclen measures the doc comments of a package's exported names:
// the median and the longest, in lines and in words, and the longest few.
//
// Usage, from the repository root:
//
//	go run ./scripts/doclen [-top 20] [-all] dir...
//	go run ./scripts/doclen -check
//
// Each dir is read as one package (tests left out) and reported on its own;
// with several dirs a total follows. A name is what go doc lists: each
// exported const or var group, type, function and method of an exported
// type; a const or var group whose specs carry their own comments counts
// each exported spec. An undocumented name counts as 0 lines, is named
// under "undocumented", and a second median leaves those out. With
// -members, exported struct fields and interface methods count too (as
// Type.Name). With no dir it measures the public packages of the
// repository: redlock, quorum, clock and redlock/redlocktest.
//
// With -check it measures nothing and fails (exit 1, one line per problem)
// when a public package's doc is longer than its bound (docBounds), when an
// exported name's comment points at the package doc ("see doc.go, …")
// instead of stating its contract, or when docs/ARCHITECTURE.md names a file
// or a redlock symbol that does not exist. make vet runs it, and its test
// runs it in make unit.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"os"
	"sort"
	"strings"
)

var withMembers bool

// entry is one exported name and the size of its doc comment.
type entry struct {
	name  string
	lines int
	words int
}

func main() {
	top := flag.Int("top", 20, "how many of the longest comments to list")
	all := flag.Bool("all", false, "list every name, not only the longest")
	flag.BoolVar(&withMembers, "members", false, "count exported struct fields and interface methods too")
	check := flag.Bool("check", false, "check doc bounds, pointer comments and docs/ARCHITECTURE.md; measure nothing")
	flag.Parse()
	if *check {
		problems, err := checkAll(".")
		if err != nil {
			fmt.Fprintln(os.Stderr, "doclen:", err)
			os.Exit(1)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "doclen:", p)
		}
		if len(problems) > 0 {
			os.Exit(1)
		}
		return
	}
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"redlock", "quorum", "clock", "redlock/redlocktest"}
	}
	var total []entry
	for _, d := range dirs {
		es := must(measure(d))
		report(d, es, *top, *all)
		total = append(total, es...)
	}
	if len(dirs) > 1 {
		report(strings.Join(dirs, " + "), total, *top, *all)
	}
}

func must(es []entry, err error) []entry {
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclen:", err)
		os.Exit(1)
	}
	return es
}

// measure returns the exported names of the package in dir, tests left out.
func measure(dir string) ([]entry, error) {
	dp, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	return named(dp), nil
}

// named lists the names go doc shows for p, each with its comment's size.
func named(p *doc.Package) []entry {
	var es []entry
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			es = append(es, specs(v)...)
		}
	}
	funcs := func(prefix string, fs []*doc.Func) {
		for _, f := range fs {
			es = append(es, size(prefix+f.Name, f.Doc))
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs("", p.Funcs)
	for _, t := range p.Types {
		es = append(es, size(t.Name, t.Doc))
		if withMembers {
			es = append(es, members(t)...)
		}
		values(t.Consts)
		values(t.Vars)
		funcs("", t.Funcs)
		funcs(t.Name+".", t.Methods)
	}
	return es
}

// members sizes the exported fields of a struct type, or the methods of an
// interface type.
func members(t *doc.Type) []entry {
	var es []entry
	for _, c := range memberTexts(t) {
		es = append(es, size(c.name, c.text))
	}
	return es
}

// memberTexts lists the exported fields of a struct type, or the methods of
// an interface type, as Type.Name, each with its comment (or, lacking one,
// the comment on its line).
func memberTexts(t *doc.Type) []comment {
	var cs []comment
	for _, s := range t.Decl.Specs {
		ts, ok := s.(*ast.TypeSpec)
		if !ok {
			continue
		}
		var list *ast.FieldList
		switch x := ts.Type.(type) {
		case *ast.StructType:
			list = x.Fields
		case *ast.InterfaceType:
			list = x.Methods
		}
		if list == nil {
			continue
		}
		for _, f := range list.List {
			for _, n := range f.Names {
				if n.IsExported() {
					text := f.Doc.Text()
					if text == "" {
						text = f.Comment.Text() // a comment on the field's line
					}
					cs = append(cs, comment{t.Name + "." + n.Name, text})
				}
			}
		}
	}
	return cs
}

// specs sizes a const or var group: as one name if its specs have no
// comments of their own, else each exported spec with its own comment, and
// the group's comment apart.
func specs(v *doc.Value) []entry {
	var es []entry
	for _, c := range specTexts(v) {
		es = append(es, size(c.name, c.text))
	}
	if len(es) == 0 {
		return []entry{size(strings.Join(v.Names, ","), v.Doc)}
	}
	if v.Doc != "" {
		es = append(es, size(strings.Join(v.Names, ",")+" (group)", v.Doc))
	}
	return es
}

// specTexts lists the exported specs of a const or var group that carry a
// comment of their own, each with it.
func specTexts(v *doc.Value) []comment {
	var cs []comment
	for _, s := range v.Decl.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok || vs.Doc == nil {
			continue
		}
		for _, n := range vs.Names {
			if n.IsExported() {
				cs = append(cs, comment{n.Name, vs.Doc.Text()})
			}
		}
	}
	return cs
}

func size(name, text string) entry {
	text = strings.TrimSpace(text)
	if text == "" {
		return entry{name: name}
	}
	return entry{name: name, lines: strings.Count(text, "\n") + 1, words: len(strings.Fields(text))}
}

func report(title string, es []entry, top int, all bool) {
	fmt.Printf("== %s: %d exported names\n", title, len(es))
	if len(es) == 0 {
		return
	}
	lines := make([]int, len(es))
	words := make([]int, len(es))
	var undocumented []string
	for i, e := range es {
		lines[i], words[i] = e.lines, e.words
		if e.lines == 0 {
			undocumented = append(undocumented, e.name)
		}
	}
	fmt.Printf("lines: median %s, mean %.1f, max %d, total %d\n", median(lines), mean(lines), maxOf(lines), sum(lines))
	fmt.Printf("words: median %s, mean %.1f, max %d, total %d\n", median(words), mean(words), maxOf(words), sum(words))
	if dl, dw := documented(lines), documented(words); len(dl) < len(lines) && len(dl) > 0 {
		fmt.Printf("documented names only (%d): lines median %s, words median %s\n", len(dl), median(dl), median(dw))
	}
	for _, b := range []int{3, 5, 10} {
		fmt.Printf("at most %d lines: %d of %d\n", b, count(lines, b), len(lines))
	}
	if len(undocumented) > 0 {
		fmt.Printf("undocumented: %s\n", strings.Join(undocumented, " "))
	}
	sorted := append([]entry(nil), es...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].lines != sorted[j].lines {
			return sorted[i].lines > sorted[j].lines
		}
		return sorted[i].words > sorted[j].words
	})
	if !all && len(sorted) > top {
		sorted = sorted[:top]
	}
	for _, e := range sorted {
		fmt.Printf("  %3d lines %4d words  %s\n", e.lines, e.words, e.name)
	}
}

func median(xs []int) string {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	n := len(s)
	if n%2 == 1 {
		return fmt.Sprint(s[n/2])
	}
	m := float64(s[n/2-1]+s[n/2]) / 2
	return fmt.Sprint(m)
}

func mean(xs []int) float64 { return float64(sum(xs)) / float64(len(xs)) }

// documented drops the zeros: the names without a comment.
func documented(xs []int) []int {
	var d []int
	for _, x := range xs {
		if x > 0 {
			d = append(d, x)
		}
	}
	return d
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

func count(xs []int, limit int) int {
	n := 0
	for _, x := range xs {
		if x <= limit {
			n++
		}
	}
	return n
}
