package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// A row is one library in one case.
type row struct {
	cas, lib  string
	o         outcome
	wait      bool // the latency is a wait (case (c)), not one acquire
	note      string
	allocs    int64 // per cycle, from testing.Benchmark; case (a) only
	hasAllocs bool
}

// find returns the row of lib in the case whose name starts with cas.
func find(rows []row, cas, lib string) *row {
	for i := range rows {
		if strings.HasPrefix(rows[i].cas, cas) && rows[i].lib == lib {
			return &rows[i]
		}
	}
	return nil
}

// printTable prints rows as one Markdown table, padded to be read as text.
func printTable(w io.Writer, rows []row) {
	head := []string{"case", "library", "cycles/s", "×floor", "×redsync", "p50", "p99",
		"allocs/cyc", "client µs/cyc", "servers µs/cyc", "cmds/cyc", "notes"}
	right := []bool{false, false, true, true, true, true, true, true, true, true, true, false}
	cells := [][]string{head}
	for _, r := range rows {
		floor, rs := find(rows, r.cas, nameFloor), find(rows, r.cas, nameRedsync)
		cells = append(cells, []string{r.cas, r.lib, fmt.Sprintf("%.0f", r.o.rate()),
			ratioOf(&r, floor), ratioOf(&r, rs), ms(r.o.quantile(0.50)), ms(r.o.quantile(0.99)),
			allocsOf(&r), us(r.o.perCycle(r.o.clientCPU)), serverCPU(&r), commands(&r), notes(rows, &r)})
	}
	markdown(w, cells, right)
	fmt.Fprintln(w, "\np50/p99: one acquire in (a), (b), (d); in (c) the wait from wanting the lock to holding it.")
	fmt.Fprintln(w, "Per cycle: CPU of this process (all the client work) and of the five servers together (INFO cpu),")
	fmt.Fprintln(w, "and commands the five servers processed (INFO stats; a failed attempt or a wake-up counts too).")
}

// markdown prints cells (the first row is the header) as a Markdown table
// with padded columns; right marks the right-aligned ones.
func markdown(w io.Writer, cells [][]string, right []bool) {
	width := make([]int, len(right))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(row []string) {
		var b strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if right[i] {
				c = pad + c
			} else {
				c += pad
			}
			b.WriteString("| " + c + " ")
		}
		fmt.Fprintln(w, b.String()+"|")
	}
	line(cells[0])
	rule := make([]string, len(right))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
		if right[i] {
			rule[i] = rule[i][1:] + ":"
		}
	}
	line(rule)
	for _, row := range cells[1:] {
		line(row)
	}
}

func ratioOf(r, base *row) string {
	if base == nil || base.o.rate() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.o.rate()/base.o.rate())
}

func allocsOf(r *row) string {
	if !r.hasAllocs {
		return "-"
	}
	return fmt.Sprint(r.allocs)
}

func serverCPU(r *row) string {
	if !r.o.serverSeen {
		return "-"
	}
	return us(r.o.perCycle(r.o.server.cpu))
}

func commands(r *row) string {
	if !r.o.serverSeen || r.o.cycles() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(r.o.server.commands)/float64(r.o.cycles()))
}

func notes(rows []row, r *row) string {
	var ns []string
	if r.wait {
		lo, hi := r.o.spread()
		ns = append(ns, fmt.Sprintf("per worker %d–%d (min/max %.2f)", lo, hi, fairness(lo, hi)))
	}
	if strings.HasPrefix(r.cas, "(d)") && !strings.Contains(r.cas, "+0s") {
		if base := find(rows, "(d) node 0 +0s", r.lib); base != nil {
			ns = append(ns, fmt.Sprintf("p50 ×%.2f, p99 ×%.2f of +0s",
				quot(r.o.quantile(0.5), base.o.quantile(0.5)), quot(r.o.quantile(0.99), base.o.quantile(0.99))))
		}
	}
	errs, cut, _ := r.o.errs()
	if cut > 0 {
		ns = append(ns, fmt.Sprintf("%d waits cut at the end (counted as lower bounds)", cut))
	}
	if errs > 0 {
		ns = append(ns, fmt.Sprintf("%d failed cycles", errs))
	}
	if r.note != "" {
		ns = append(ns, r.note)
	}
	return strings.Join(ns, "; ")
}

func fairness(lo, hi int) float64 {
	if hi == 0 {
		return 0
	}
	return float64(lo) / float64(hi)
}

func quot(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

// printCommandMix prints, per row, the commands the servers ran per cycle,
// most frequent first; the commands a script calls count as INFO counts them.
func printCommandMix(w io.Writer, rows []row) {
	fmt.Fprintln(w, "\nserver commands per cycle (five servers together; a script's redis.call()s included):")
	for _, r := range rows {
		c := r.o.cycles()
		if !r.o.serverSeen || c == 0 {
			continue
		}
		type kv struct {
			cmd string
			n   int64
		}
		var mix []kv
		for k, n := range r.o.server.calls {
			if k != "info" && n > 0 {
				mix = append(mix, kv{k, n})
			}
		}
		slices.SortFunc(mix, func(a, b kv) int { return cmp.Compare(b.n, a.n) })
		var parts []string
		for _, m := range mix {
			if per := float64(m.n) / float64(c); per >= 0.05 {
				parts = append(parts, fmt.Sprintf("%s %.1f", m.cmd, per))
			}
		}
		fmt.Fprintf(w, "  %-30s %-24s %s\n", r.cas, r.lib, strings.Join(parts, ", "))
	}
}

// printTargets states each target of issue 10 (which tightened issue 5's)
// against this run, for both quorumlock configurations.
func printTargets(w io.Writer, rows []row) {
	fmt.Fprintln(w, "\nissue 26 targets, this run:")
	for _, ql := range []string{nameQLNoRenew, nameQL} {
		target(w, ql, "1 worker ≥ 0.9× floor cycles/s", rateRatio(rows, "(a)", ql, nameFloor), 0.9, true)
		target(w, ql, "1 worker ≥ 1.1× redsync cycles/s", rateRatio(rows, "(a)", ql, nameRedsync), 1.1, true)
		target(w, ql, "16 workers ≥ 1.5× floor cycles/s", rateRatio(rows, "(b) 16", ql, nameFloor), 1.5, true)
		target(w, ql, "16 workers ≥ 1.6× redsync cycles/s", rateRatio(rows, "(b) 16", ql, nameRedsync), 1.6, true)
		target(w, ql, "64 workers ≥ 2× floor cycles/s", rateRatio(rows, "(b) 64", ql, nameFloor), 2, true)
		if r := find(rows, "(c)", ql); r != nil {
			lo, hi := r.o.spread()
			target(w, ql, "one key: min/max acquisitions ≥ 0.90", fairness(lo, hi), 0.90, true)
			target(w, ql, "one key: ≥ 0.6× redsync cycles/s", rateRatio(rows, "(c)", ql, nameRedsync), 0.6, true)
			target(w, ql, fmt.Sprintf("one key: p99 wait ≤ %v (before)", *flagP99Before),
				r.o.quantile(0.99).Seconds()*1000, float64(*flagP99Before)/float64(time.Millisecond), false)
		}
		slow, base := find(rows, "(d) node 0 +"+flagSlow.String(), ql), find(rows, "(d) node 0 +0s", ql)
		if slow != nil && base != nil && *flagSlow != 0 {
			target(w, ql, "one master slow: p50 ≤ 1.20× healthy p50", quot(slow.o.quantile(0.5), base.o.quantile(0.5)), 1.20, false)
		}
		q, rs, fl := find(rows, "(a)", ql), find(rows, "(a)", nameRedsync), find(rows, "(a)", nameFloor)
		if q != nil && rs != nil && q.hasAllocs && rs.hasAllocs {
			target(w, ql, "allocs/cycle ≤ redsync's", float64(q.allocs)/float64(rs.allocs), 1, false)
		}
		if q != nil && fl != nil && fl.o.server.cpu > 0 {
			target(w, ql, "servers µs/cycle ≤ 2× floor's", quot(q.o.perCycle(q.o.server.cpu), fl.o.perCycle(fl.o.server.cpu)), 2, false)
		}
	}
	// The watchdog on by default: ≤ 10 % slower than off, at any concurrency.
	for _, cas := range []string{"(a)", "(b) 16", "(b) 64"} {
		if r := rateRatio(rows, cas, nameQL, nameQLNoRenew); r > 0 {
			target(w, nameQL, cas+" watchdog on ≥ 0.9× off", r, 0.9, true)
		}
	}
}

// rateRatio is the cycles/s of lib over base's in one case; -1 if either is
// missing.
func rateRatio(rows []row, cas, lib, base string) float64 {
	a, b := find(rows, cas, lib), find(rows, cas, base)
	if a == nil || b == nil || b.o.rate() == 0 {
		return -1
	}
	return a.o.rate() / b.o.rate()
}

// target prints one line: the measured value against the bound, at least
// (atLeast) or at most.
func target(w io.Writer, lib, what string, got, bound float64, atLeast bool) {
	if got < 0 {
		return
	}
	verdict := "met"
	if (atLeast && got < bound) || (!atLeast && got > bound) {
		verdict = fmt.Sprintf("MISSED by %.1f%%", 100*abs(got-bound)/bound)
	}
	fmt.Fprintf(w, "  %-24s %-42s measured %6.2f  %s\n", lib, what, got, verdict)
}

func abs(f float64) float64 { return max(f, -f) }
