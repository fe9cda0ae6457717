package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

// TestRepositoryDocs is what make unit runs: the public packages' docs
// within their bounds, no exported comment pointing at the package doc,
// and every file and redlock symbol docs/ARCHITECTURE.md names existing.
func TestRepositoryDocs(t *testing.T) {
	problems, err := checkAll(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckDocsRefuses: a package doc over its bound, and exported comments
// that send the reader to doc.go or the package doc, are each reported.
func TestCheckDocsRefuses(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("// More prose.\n", 20)
	write(t, filepath.Join(dir, "doc.go"), "// Package p is long.\n"+long+"package p\n")
	write(t, filepath.Join(dir, "p.go"), `package p

// F does something. See doc.go, "Errors".
func F() {}

// G does something else; see the package doc for what it returns.
func G() {}

// H returns 1 on every input, and never fails.
func H() int { return 1 }

// T is a type.
type T struct {
	// X is a field (doc.go, "Fields").
	X int
}
`)
	problems, err := checkDocs(dir, ".", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"package doc is 21 lines, over its bound of 10", "comment of F ", "comment of G ", "comment of T.X "}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d = %q, want it to say %q", i, problems[i], w)
		}
	}
	if problems, _ := checkDocs(dir, ".", 21); len(problems) != 3 {
		t.Errorf("at its bound, the doc is accepted: got %q, want the 3 pointers only", problems)
	}
}

// TestCheckArchitectureRefuses: the names docs/ARCHITECTURE.md held before
// issue 31 — a lease.lua that does not exist, warmth and do placed in
// node.go — are reported; names that exist are not.
func TestCheckArchitectureRefuses(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "redlock", "node.go"), "package redlock\n\nfunc (nd *node) call() {}\n")
	write(t, filepath.Join(dir, "redlock", "own.go"), "package redlock\n\ntype warmth struct{}\n")
	write(t, filepath.Join(dir, "redlock", "prelude.lua"), "local function lease_holds() end\n")
	write(t, filepath.Join(dir, "quorum", "round.go"), "package quorum\n\nfunc (r *Round) Run() {}\n")
	write(t, filepath.Join(dir, "docs", "ARCHITECTURE.md"), "# A\n\n"+
		"The argument is in `docs/SAFETY.md`; fan-outs use `golang.org/x/sync/errgroup` and `database/sql`.\n\n"+
		"## Where each guarantee lives\n\n"+
		"| leases | `lease.lua` (`lease_holds`), `prelude.lua` (`lease_holds`) |\n"+
		"| bounded waits | `node.go` (`do`, `warmth`), `own.go` (`warmth`), `node.go`: `call` |\n"+
		"| rounds | `quorum.Round.Run`, `quorum.Round.Walk`, `node.call`, `settle` |\n")
	problems, err := checkArchitecture(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"names docs/SAFETY.md, which is nowhere",
		"names lease.lua, which is nowhere",
		"places do in redlock/node.go",
		"places warmth in redlock/node.go",
		"names do, but no file of its package names do",
		"names quorum.Round.Walk, but no file of its package names Walk",
		"names settle, but no file of its package names settle",
	}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d = %q, want it to say %q", i, problems[i], w)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
