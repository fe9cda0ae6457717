package history_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed818c56a1/quorumlock/history"
)

func TestWriteReadRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := history.NewWriter(&b)
	want := sample()
	for _, r := range want {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if lines := strings.Count(b.String(), "\n"); lines != len(want) {
		t.Fatalf("%d lines written, want %d", lines, len(want))
	}
	got, err := history.Read(strings.NewReader("\n" + b.String() + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) || got[i].Type != want[i].Type || got[i].Key != want[i].Key ||
			got[i].Token != want[i].Token || !got[i].Until.Equal(want[i].Until) || got[i].Refused != want[i].Refused {
			t.Errorf("record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestWriteRefusesIncompleteRecords(t *testing.T) {
	w := history.NewWriter(&bytes.Buffer{})
	for _, r := range []history.Record{{Time: at(0)}, {Type: history.TypeGrant}} {
		if err := w.Write(r); err == nil {
			t.Errorf("Write(%+v) = nil, want an error", r)
		}
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v after refused records, want nil", err)
	}
}

func TestReadNamesTheBadLine(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"grant","time":"2026-11-26T12:00:00Z"}` + "\nnot json\n": "line 2",
		"\n" + `{"type":"grant"}`: "line 2",
	} {
		_, err := history.Read(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "history: ") {
			t.Errorf("Read(%q) = %v, want an error naming %s", in, err, want)
		}
	}
	recs, err := history.Read(strings.NewReader(`{"type":"grant","time":"2026-11-26T12:00:00Z","key":"k","future":1}`))
	if err != nil || len(recs) != 1 || recs[0].Key != "k" {
		t.Errorf("unknown field: got %v, %v", recs, err)
	}
}

func TestSaveWritesHistoryBesidePage(t *testing.T) {
	page := filepath.Join(t.TempDir(), "run.html")
	path, err := history.Save(page, sample())
	if err != nil || path != strings.TrimSuffix(page, ".html")+".jsonl" {
		t.Fatalf("Save = %q, %v", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recs, err := history.Read(f); err != nil || len(recs) != len(sample()) {
		t.Errorf("history read back: %d records, %v; want %d", len(recs), err, len(sample()))
	}
	if b, err := os.ReadFile(page); err != nil || count(string(b), "hold") != countType(sample(), history.TypeGrant) {
		t.Errorf("page: %v, or not every hold drawn", err)
	}
	if _, err := history.Save(filepath.Join(t.TempDir(), "h.jsonl"), sample()); err == nil {
		t.Error("Save over its own history: nil error")
	}
}
