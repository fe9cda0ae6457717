package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ticker writes a progress line every second until ctx ends.
func (d *demoRun) ticker(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var before int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sold := d.stats.sold.Load()
			d.progress("sold %d (%d/s), stock %d, not obtained %d, locks lost %d, overlaps %d",
				sold, sold-before, int64(d.stock)-sold, d.stats.notObtained.Load(),
				d.stats.lost.Load(), d.check.overlaps.Load())
			before = sold
		}
	}
}

// A row is one line of the demo's final table.
type row struct{ name, value, note string }

// report prints the final table to stdout and returns the exit status: 1 if
// any check failed.
func (d *demoRun) report() int {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	left, sold, err := d.store.counts(ctx)
	if err != nil {
		fmt.Fprintf(d.c.stderr, "quorumlock demo: reading the store: %v\n", err)
		return exitFailure
	}
	rows, failures := d.results(left, sold)
	tw := newTable(d.c.stdout)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.value, r.note)
	}
	tw.Flush()
	if len(failures) > 0 {
		fmt.Fprintf(d.c.stderr, "quorumlock demo: FAILED: %s\n", strings.Join(failures, "; "))
		return exitFailure
	}
	return exitOK
}

// results returns the final table and the checks that failed.
func (d *demoRun) results(left, sold int64) (rows []row, failures []string) {
	initial := int64(d.stock)
	oversold := max(0, sold-initial)
	lostUpdates := initial - left - sold
	overlaps := d.check.overlaps.Load()
	p := d.stats.percentiles(50, 99)
	rows = []row{
		{"sold", fmt.Sprint(sold), fmt.Sprintf("of %d, by %d buyers in %v", initial, d.workers, d.duration)},
		{"stock left", fmt.Sprint(left), ""},
		{"oversold", fmt.Sprint(oversold), "sold − initial stock: must be 0"},
		{"lost updates", fmt.Sprint(lostUpdates), "initial − left − sold: must be 0"},
		{"overlaps", fmt.Sprint(overlaps), "holders that found another inside: must be 0"},
		{"locks lost", fmt.Sprint(d.stats.lost.Load()), ""},
		{"not obtained", fmt.Sprint(d.stats.notObtained.Load()), "attempts that gave up waiting"},
		{"errors", fmt.Sprint(d.stats.failed.Load()), "failed store calls, releases no majority confirmed"},
		{"wait p50", p[0].Round(10 * time.Microsecond).String(), "from asking for the lock to holding it"},
		{"wait p99", p[1].Round(10 * time.Microsecond).String(), ""},
	}
	failures = check(failures, oversold > 0, "%d items oversold", oversold)
	failures = check(failures, lostUpdates != 0, "%d lost updates", lostUpdates)
	failures = check(failures, overlaps > 0, "%d overlapping holds", overlaps)
	failures = check(failures, initial > 0 && sold == 0, "nothing was sold")
	rows, failures = d.faultResults(rows, failures)
	verdict := "OK"
	if len(failures) > 0 {
		verdict = "FAILED"
	}
	return append(rows, row{"verdict", verdict, ""}), failures
}

// faultResults adds the rows of the demo faults' events, and the failure of a
// node that did not restart. A lost lock is no failure: the library saw that
// it could not renew in time (on a stalled machine) and said so.
func (d *demoRun) faultResults(rows []row, failures []string) ([]row, []string) {
	s := &d.faults
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.emb != nil {
		rows = append(rows, row{fmt.Sprintf("node %d", killedNode), killText(s), "a minority down: buying goes on"})
		failures = check(failures, s.restartErr != nil, "node restart: %v", s.restartErr)
	}
	watchdog, expiry := "not reached before the end", "not reached before the end"
	switch {
	case s.holdErr != nil:
		watchdog = "lock lost: " + s.holdErr.Error()
	case !s.crashedAt.IsZero():
		watchdog = fmt.Sprintf("held %v on a %v TTL, renewed %d times", s.held, d.ttl, s.renewals)
	}
	switch {
	case s.takeover > 0:
		expiry = fmt.Sprintf("a buyer took over %v after the crash", s.takeover.Round(time.Millisecond))
	case !s.crashedAt.IsZero():
		expiry = fmt.Sprintf("no buyer took over in the %v left", d.ended.Sub(s.crashedAt).Round(time.Millisecond))
	}
	return append(rows,
		row{"watchdog", watchdog, "a holder keeps the lock past its TTL"},
		row{"expiry", expiry, "the holder crashes without releasing"}), failures
}

func killText(s *demoFaults) string {
	switch {
	case s.killedAt == 0:
		return "not killed before the end"
	case s.restartedAt == 0:
		return fmt.Sprintf("killed at %s, not restarted before the end", fmtSeconds(s.killedAt))
	}
	return fmt.Sprintf("killed at %s, restarted empty at %s", fmtSeconds(s.killedAt), fmtSeconds(s.restartedAt))
}

// check appends a failure when bad holds.
func check(failures []string, bad bool, format string, args ...any) []string {
	if bad {
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	return failures
}
