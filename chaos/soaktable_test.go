package chaos_test

import (
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
)

// A tally is the soak's figures for one kind of fault.
type tally struct {
	episodes, fresh, acquisitions, overlaps, regressions, losses, late int
	faultTime, worstMargin                                             time.Duration

	fenced                  bool // the soak wrote to a fenced store: the columns below are shown
	written, refused, stale int  // fenced writes accepted, refused as stale, and stale ones accepted
}

// noFault names the time between episodes.
const noFault = "none (between episodes)"

// table returns the soak's figures per kind of fault, as Markdown table rows
// (faultTable).
func (s *soak) table(history []chaos.Hold, writes []chaos.Write) []string {
	return faultTable(history, writes, s.episodes, faultKinds(), ttl)
}

// faultTable returns a soak's figures per kind of fault, kinds in order, as
// Markdown table rows. An acquisition counts for the fault in force when it
// started, an overlap or regression for the fault in force when its second
// hold started, and a loss for the fault in force when it was signalled or
// up to one lease before (a lease outlives the fault that dooms it by up to
// one TTL). Fresh clients count for the episode they were drawn with. With
// writes to a fenced store (nil: none, and no such columns), a write
// counts for the fault in force when it was sent.
func faultTable(history []chaos.Hold, writes []chaos.Write, episodes []episode, kinds []string, lease time.Duration) []string {
	rep := chaos.Check(history)
	tallies := map[string]*tally{}
	get := func(kind string) *tally {
		if tallies[kind] == nil {
			tallies[kind] = &tally{fenced: writes != nil}
		}
		return tallies[kind]
	}
	for _, e := range episodes {
		get(e.kind).episodes++
		get(e.kind).fresh += e.fresh
		get(e.kind).faultTime += e.to - e.from
	}
	for _, h := range history {
		get(kindAt(episodes, h.Start, 0)).acquisitions++
		if h.Lost {
			tl, margin := get(kindAt(episodes, h.LossAt, lease)), h.Until-h.LossAt
			if tl.losses == 0 || margin < tl.worstMargin {
				tl.worstMargin = margin
			}
			if margin <= 0 {
				tl.late++
			}
			tl.losses++
		}
	}
	for _, o := range rep.Overlaps {
		get(kindAt(episodes, o.Second.Start, 0)).overlaps++
	}
	for _, g := range rep.Regressions {
		get(kindAt(episodes, g.Next.Start, 0)).regressions++
	}
	wrep := chaos.CheckWrites(writes)
	for _, w := range writes {
		tl := get(kindAt(episodes, w.Start, 0))
		switch {
		case w.Accepted:
			tl.written++
		case w.Refused:
			tl.refused++
		}
	}
	for _, w := range wrep.StaleAccepted {
		get(kindAt(episodes, w.Start, 0)).stale++
	}
	head, rule := "| fault | episodes | fault time | fresh clients | acquisitions | overlaps | token regressions | losses signalled (late) | worst loss-signal margin |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	if writes != nil {
		head, rule = head+" fenced writes accepted | refused as stale | stale accepted |", rule+" ---: | ---: | ---: |"
	}
	rows := []string{head, rule}
	for _, kind := range append(kinds, noFault) {
		if tl := tallies[kind]; tl != nil {
			rows = append(rows, tl.row(kind))
		}
	}
	total := &tally{acquisitions: rep.Acquisitions, overlaps: len(rep.Overlaps), regressions: len(rep.Regressions),
		losses: rep.Losses, late: rep.Late, worstMargin: rep.WorstMargin, episodes: len(episodes),
		fenced: writes != nil, written: wrep.Accepted, refused: wrep.Refused, stale: len(wrep.StaleAccepted)}
	for _, e := range episodes {
		total.faultTime += e.to - e.from
		total.fresh += e.fresh
	}
	return append(rows, total.row("**all**"))
}

// kindAt returns the kind of the episode in force at offset at, or up to
// grace after its end; noFault if none.
func kindAt(episodes []episode, at, grace time.Duration) string {
	for i := len(episodes) - 1; i >= 0; i-- {
		if e := episodes[i]; e.from <= at && at < e.to+grace {
			return e.kind
		}
	}
	return noFault
}

func (tl *tally) row(kind string) string {
	margin := "n/a"
	if tl.losses > 0 {
		margin = tl.worstMargin.Round(100 * time.Microsecond).String()
	}
	row := fmt.Sprintf("| %s | %d | %v | %d | %d | %d | %d | %d (%d) | %s |", kind, tl.episodes,
		tl.faultTime.Round(time.Second), tl.fresh, tl.acquisitions, tl.overlaps, tl.regressions, tl.losses, tl.late, margin)
	if tl.fenced {
		row += fmt.Sprintf(" %d | %d | %d |", tl.written, tl.refused, tl.stale)
	}
	return row
}

func faultKinds() []string {
	kinds := make([]string, len(faults))
	for i, f := range faults {
		kinds[i] = f.kind
	}
	return kinds
}
