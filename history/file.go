package history

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes recs to path as a history file, replacing it.
func WriteFile(path string, recs []Record) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	b := bufio.NewWriter(f)
	w := NewWriter(b)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return b.Flush()
}

// RenderFile reads the history file src and writes its picture (Render)
// to dst, replacing it.
func RenderFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	recs, err := Read(in)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	b := bufio.NewWriter(out)
	if err := Render(b, recs); err != nil {
		return err
	}
	return b.Flush()
}

// Save writes recs to the history file beside page — page's name with its
// extension replaced by .jsonl — and draws them on page (Render). It
// returns the history file's path.
func Save(page string, recs []Record) (string, error) {
	path := HistoryPath(page)
	if path == page {
		return "", fmt.Errorf("history: page %s must not end in .jsonl, the history's extension", page)
	}
	if err := WriteFile(path, recs); err != nil {
		return "", err
	}
	return path, RenderFile(path, page)
}

// HistoryPath returns the history file's name for page: page with its
// extension replaced by .jsonl.
func HistoryPath(page string) string {
	return strings.TrimSuffix(page, filepath.Ext(page)) + ".jsonl"
}
