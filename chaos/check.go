package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// An Overlap is a pair of holds of one key whose intervals [Start, End)
// intersect: two holders worked under the same lock at once.
type Overlap struct {
	First, Second Hold          // First started no later than Second
	By            time.Duration // how long they overlapped
}

// A Regression is a hold whose fencing token is not larger than the token of
// the hold of the same key that started just before it.
type Regression struct {
	Prev, Next Hold
}

// A Report sums up a history: what Check found and the figures a scenario
// logs.
type Report struct {
	Acquisitions int // holds in the history
	Overlaps     []Overlap
	Regressions  []Regression
	Losses       int    // holds whose loss the library signalled
	Late         int    // of those, signalled at or after Until()
	Unsignalled  []Hold // holds that Unlock found lost without a signal

	// MostAtOnce is, per semaphore name, the most holds that overlapped
	// at one instant: the scenario compares it with the limit.
	MostAtOnce map[string]int

	// WorstMargin is the smallest Until − LossAt over the signalled
	// losses: how close to the end of validity a holder was told at
	// worst. Negative means told after the validity had ended. It is
	// meaningful only when Losses > 0.
	WorstMargin time.Duration
}

// Safe reports whether the history had no overlap and no token regression.
func (r *Report) Safe() bool { return len(r.Overlaps) == 0 && len(r.Regressions) == 0 }

// Check verifies history: no two holds of one key overlap unless both are
// shared (readers), and tokens strictly increase in the order the holds of
// a key started — a reader's token is at least the last writer's before it.
// For semaphores it also counts the most holds of a name at once. It does
// not modify history.
func Check(history []Hold) Report {
	rep := Report{Acquisitions: len(history)}
	for _, holds := range byKey(history) {
		rep.Overlaps = append(rep.Overlaps, overlaps(holds)...)
		rep.Regressions = append(rep.Regressions, regressions(holds)...)
	}
	for name, holds := range byName(history) {
		if rep.MostAtOnce == nil {
			rep.MostAtOnce = map[string]int{}
		}
		rep.MostAtOnce[name] = mostAtOnce(holds)
	}
	for _, h := range history {
		switch {
		case h.Lost:
			margin := h.Until - h.LossAt
			if rep.Losses == 0 || margin < rep.WorstMargin {
				rep.WorstMargin = margin
			}
			if margin <= 0 {
				rep.Late++
			}
			rep.Losses++
		case h.Unsignalled:
			rep.Unsignalled = append(rep.Unsignalled, h)
		}
	}
	return rep
}

// byKey groups history by key, each group sorted by start (then end).
func byKey(history []Hold) map[string][]Hold {
	groups := map[string][]Hold{}
	for _, h := range history {
		groups[h.Key] = append(groups[h.Key], h)
	}
	for _, holds := range groups {
		slices.SortStableFunc(holds, func(a, b Hold) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
		})
	}
	return groups
}

// overlaps returns every intersecting pair of holds, sorted by start. Each
// hold is compared with the later-starting ones until one starts after it
// ended, so a clean history costs about one comparison per hold.
func overlaps(holds []Hold) []Overlap {
	var out []Overlap
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if b.Start >= a.End {
				break
			}
			if b.End > b.Start && a.End > a.Start && !(a.Shared && b.Shared) { // an empty interval holds nothing; readers share
				out = append(out, Overlap{First: a, Second: b, By: min(a.End, b.End) - b.Start})
			}
		}
	}
	return out
}

// regressions returns, in holds sorted by start, each writer's hold whose
// token does not exceed every token before it, and each reader's hold whose
// token is below the last writer's before it.
func regressions(holds []Hold) []Regression {
	var out []Regression
	var top, writer *Hold // the hold with the largest token so far; the last writer
	for i := range holds {
		h := &holds[i]
		switch {
		case h.Shared && writer != nil && h.Token < writer.Token:
			out = append(out, Regression{Prev: *writer, Next: *h})
		case !h.Shared && top != nil && h.Token <= top.Token:
			out = append(out, Regression{Prev: *top, Next: *h})
		}
		if top == nil || h.Token > top.Token {
			top = h
		}
		if !h.Shared {
			writer = h
		}
	}
	return out
}

// byName groups the holds of semaphores by name.
func byName(history []Hold) map[string][]Hold {
	groups := map[string][]Hold{}
	for _, h := range history {
		if h.Name != "" {
			groups[h.Name] = append(groups[h.Name], h)
		}
	}
	return groups
}

// mostAtOnce is the most holds whose intervals [Start, End) contain one
// instant.
func mostAtOnce(holds []Hold) int {
	type edge struct {
		at time.Duration
		d  int
	}
	edges := make([]edge, 0, 2*len(holds))
	for _, h := range holds {
		if h.End > h.Start {
			edges = append(edges, edge{h.Start, 1}, edge{h.End, -1})
		}
	}
	// At one instant an end comes before a start: [Start, End) is open at End.
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.d, b.d)) })
	most, now := 0, 0
	for _, e := range edges {
		now += e.d
		most = max(most, now)
	}
	return most
}

// String formats the figures of a report on one line, followed by a line for
// each of the first few overlaps and regressions.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acquisitions=%d overlaps=%d token-regressions=%d losses-signalled=%d (late %d) unsignalled-losses=%d worst-loss-margin=%s",
		r.Acquisitions, len(r.Overlaps), len(r.Regressions), r.Losses, r.Late, len(r.Unsignalled), r.MarginString())
	const shown = 3
	for _, o := range r.Overlaps[:min(shown, len(r.Overlaps))] {
		fmt.Fprintf(&b, "\n  overlap %v: %s and %s", o.By, o.First, o.Second)
	}
	for _, g := range r.Regressions[:min(shown, len(r.Regressions))] {
		fmt.Fprintf(&b, "\n  token regression: %s then %s", g.Prev, g.Next)
	}
	for _, h := range r.Unsignalled[:min(shown, len(r.Unsignalled))] {
		fmt.Fprintf(&b, "\n  unsignalled loss: %s, Until %v", h, h.Until.Round(time.Microsecond))
	}
	return b.String()
}

// MarginString is WorstMargin rounded to 0.1 ms, or "n/a" without losses.
func (r *Report) MarginString() string {
	if r.Losses == 0 {
		return "n/a"
	}
	return r.WorstMargin.Round(100 * time.Microsecond).String()
}

// String formats a hold as client:key#token[start,end).
func (h Hold) String() string {
	return fmt.Sprintf("%s:%s#%d[%v,%v)", h.Client, h.Key, h.Token,
		h.Start.Round(time.Microsecond), h.End.Round(time.Microsecond))
}
