package main

import (
	"io"
	"strings"
	"text/tabwriter"
)

// How every subcommand writes: tables, and errors on one line.

// newTable returns a writer that aligns tab-separated columns; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// oneLine joins the lines of err's message (a context error joined with a
// quorum error, say) with "; ".
func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
