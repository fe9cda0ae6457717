package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/seed818c56a1/quorumlock/history"
)

// drawReport is the report subcommand: it draws a history file as HTML.
func (c *cli) drawReport(args []string) int {
	fs := newFlagSet("report")
	out := fs.String("o", "", "write the page to `FILE` instead of stdout")
	if code, ok := c.parse(fs, reportUsage, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.usageError(fs, fmt.Errorf("want one history file (or - for stdin), got %d arguments", fs.NArg()))
	}
	recs, err := c.readHistory(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock report: %v\n", err)
		return exitFailure
	}
	if *out != "" {
		err = writeReport(*out, recs)
	} else {
		b := bufio.NewWriter(c.stdout)
		if err = history.Render(b, recs); err == nil {
			err = b.Flush()
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock report: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func (c *cli) readHistory(name string) ([]history.Record, error) {
	var in io.Reader = c.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	return history.Read(in)
}

// writeReport writes the page of recs to the file name.
func writeReport(name string, recs []history.Record) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	b := bufio.NewWriter(f)
	err = history.Render(b, recs)
	if err == nil {
		err = b.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

const reportUsage = `Usage: quorumlock report [-o FILE] HISTORY.jsonl

Draws a history — a JSON Lines file of grants, releases, losses, faults and
fenced writes, as 'quorumlock demo --report', the chaos soak and
history.Observer write it — as one self-contained HTML page: a lane per
node with its faults, a lane per key with each hold a bar coloured by
client and labelled with its fencing token, the lease after a loss signal
drawn faint, overlaps and stale writes refused in red, details on hover. The
page has no script and loads nothing: it opens offline. HISTORY "-" reads
stdin. The format is documented in the package doc of
github.com/seed818c56a1/quorumlock/history and in the README.

Flags:
{{flags}}
Exit status:
  0    the page was written
  1    the history could not be read (the bad line is named) or the page written
  2    bad flags or arguments

Examples:
  quorumlock report history.jsonl > run.html
  quorumlock demo --report run.html && xdg-open run.html
`
