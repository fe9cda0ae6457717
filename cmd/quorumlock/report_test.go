package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seed818c56a1/quorumlock/history"
)

// rects counts the page's SVG rectangles whose class starts with class.
func rects(page, class string) int {
	return len(regexp.MustCompile(`<rect class="`+class+`[ "]`).FindAllStringIndex(page, -1))
}

// TestDemoReport runs the demo with --report: it must print the page's and
// the history's paths, and the page must draw every hold the history
// recorded, the kill and the empty restart of the node, and load nothing.
func TestDemoReport(t *testing.T) {
	page := filepath.Join(t.TempDir(), "run.html")
	code, stdout, stderr := inProcess(append([]string{"demo", "--report", page}, shortDemo...)...)
	checkDemo(t, code, stdout, stderr, "restarted empty at")
	jsonl := strings.TrimSuffix(page, ".html") + ".jsonl"
	if want := "report: " + page + " (history " + jsonl + ")"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	f, err := os.Open(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := history.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range recs {
		kinds[r.Type]++
	}
	if kinds[history.TypeGrant] == 0 || kinds[history.TypeGrant] != kinds[history.TypeRelease]+kinds[history.TypeLoss] {
		t.Errorf("history: %v; want grants, each ended by a release or a loss", kinds)
	}
	if kinds[history.TypeLoss] == 0 {
		t.Errorf("history: %v; want the crashing process's hold ended by a loss", kinds)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if got := rects(html, "hold"); got != kinds[history.TypeGrant] {
		t.Errorf("%d holds drawn, %d recorded", got, kinds[history.TypeGrant])
	}
	if got := rects(html, "fault"); got != 2 || kinds[history.TypeFault] != 2 {
		t.Errorf("%d faults drawn, %d recorded; want 2 (kill, empty restart)", got, kinds[history.TypeFault])
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "href=") || strings.Contains(html, "src=") {
		t.Error("the page is not self-contained")
	}
}

func TestReportSubcommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "h.jsonl")
	os.WriteFile(good, []byte(`{"type":"grant","time":"2026-11-26T12:00:00Z","client":"a","key":"k","token":3}
{"type":"release","time":"2026-11-26T12:00:01Z","client":"a","key":"k","token":3}
`), 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"type\":\"grant\",\"time\":\"2026-11-26T12:00:00Z\"}\n{oops\n"), 0o644)
	code, stdout, stderr := inProcess("report", good)
	if code != exitOK || rects(stdout, "hold") != 1 || !strings.HasPrefix(stdout, "<!DOCTYPE html>") {
		t.Errorf("report %s: status %d, stderr %q; want 0 and a page with one hold", good, code, stderr)
	}
	out := filepath.Join(dir, "out.html")
	if code, _, stderr := inProcess("report", "-o", out, good); code != exitOK {
		t.Errorf("report -o: status %d: %s", code, stderr)
	} else if b, _ := os.ReadFile(out); rects(string(b), "hold") != 1 {
		t.Errorf("report -o wrote no page with one hold")
	}
	if code, _, stderr := inProcess("report", bad); code != exitFailure || !strings.Contains(stderr, "line 2") {
		t.Errorf("report of a bad file: status %d, stderr %q; want 1 naming line 2", code, stderr)
	}
	for _, args := range [][]string{{"report"}, {"report", good, good}, {"report", "--nope", good}} {
		if code, _, _ := inProcess(args...); code != exitUsage {
			t.Errorf("%v: status %d, want %d", args, code, exitUsage)
		}
	}
}
