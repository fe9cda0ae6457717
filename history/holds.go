package history

import (
	"cmp"
	"slices"
	"time"
)

// A hold is one holding of a key, assembled from its grant and the release
// or loss that ended it.
type hold struct {
	client, key string
	token       int64
	shared      bool
	start, end  time.Time // grant; release or loss signal (the run's end when open)
	until       time.Time // end of validity when it ended
	lost, open  bool      // ended by a loss signal; never ended in the history
	note        string
}

// A run is a history made ready to draw.
type run struct {
	title     string
	nodes     []string // from the run record, then as faults name them
	from, to  time.Time
	holds     []hold
	faults    []Record
	writes    []Record
	overlaps  []overlap
	unmatched int // releases and losses without their grant
	refused   int
}

// An overlap is the stretch in which two holds of one key, not both
// shared, were held at once.
type overlap struct {
	key        string
	a, b       *hold
	start, end time.Time
}

type holdID struct {
	client, key string
	token       int64
}

// assemble pairs each grant with the release or loss of the same client,
// key and token that follows it, and collects faults and writes.
func assemble(recs []Record) *run {
	r := &run{}
	open := map[holdID][]int{}
	for _, rec := range recs {
		r.widen(rec.Time, rec.End, rec.Until)
		id := holdID{rec.Client, rec.Key, rec.Token}
		switch rec.Type {
		case TypeRun:
			r.title = cmp.Or(r.title, rec.Title)
			r.addNodes(rec.Nodes...)
		case TypeGrant:
			open[id] = append(open[id], len(r.holds))
			r.holds = append(r.holds, hold{client: rec.Client, key: rec.Key, token: rec.Token, shared: rec.Shared,
				start: rec.Time, until: rec.Until, open: true, note: rec.Note})
		case TypeRelease, TypeLoss:
			if len(open[id]) == 0 {
				r.unmatched++
				continue
			}
			h := &r.holds[open[id][0]]
			open[id] = open[id][1:]
			h.end, h.open, h.lost = rec.Time, false, rec.Type == TypeLoss
			h.until = cmp.Or(rec.Until, h.until)
			h.note = joinNote(h.note, rec.Note)
		case TypeFault:
			r.faults = append(r.faults, rec)
			if rec.Node != "" {
				r.addNodes(rec.Node)
			}
		case TypeWrite:
			r.writes = append(r.writes, rec)
			if rec.Refused {
				r.refused++
			}
		}
	}
	for i := range r.holds {
		if r.holds[i].open {
			r.holds[i].end = r.to
		}
	}
	r.overlaps = overlaps(r.holds)
	return r
}

// widen stretches the run's span over every non-zero instant of ts.
func (r *run) widen(ts ...time.Time) {
	for _, t := range ts {
		if t.IsZero() {
			continue
		}
		if r.from.IsZero() || t.Before(r.from) {
			r.from = t
		}
		if t.After(r.to) {
			r.to = t
		}
	}
}

func (r *run) addNodes(nodes ...string) {
	for _, n := range nodes {
		if !slices.Contains(r.nodes, n) {
			r.nodes = append(r.nodes, n)
		}
	}
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// overlaps returns, for every key, each pair of holds held at once (their
// [start, end) intersect) unless both are shared.
func overlaps(holds []hold) []overlap {
	byKey := map[string][]*hold{}
	for i := range holds {
		byKey[holds[i].key] = append(byKey[holds[i].key], &holds[i])
	}
	var out []overlap
	for key, hs := range byKey {
		slices.SortStableFunc(hs, func(a, b *hold) int { return a.start.Compare(b.start) })
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if !b.start.Before(a.end) {
					break
				}
				if (a.shared && b.shared) || !a.end.After(a.start) || !b.end.After(b.start) {
					continue
				}
				out = append(out, overlap{key: key, a: a, b: b, start: b.start, end: minTime(a.end, b.end)})
			}
		}
	}
	slices.SortFunc(out, func(x, y overlap) int { return cmp.Or(cmp.Compare(x.key, y.key), x.start.Compare(y.start)) })
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
