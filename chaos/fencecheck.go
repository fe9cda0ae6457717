package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// A WriteReport sums up the writes offered to a FencedStore: what
// CheckWrites found.
type WriteReport struct {
	Accepted, Refused, Failed int

	// StaleAccepted are accepted writes whose token was smaller than that
	// of a write to the same key accepted before they were sent: the store
	// let a stale write land. A safe store has none.
	StaleAccepted []Write
	// Unfounded are refusals that no larger token explains: no write to
	// the key with a larger token had been sent (accepted or failed)
	// before the refusal came back, or the token the store named was not
	// larger.
	Unfounded []Write
}

// Safe reports whether no stale write was accepted and no refusal was
// unfounded.
func (r *WriteReport) Safe() bool { return len(r.StaleAccepted) == 0 && len(r.Unfounded) == 0 }

func (r *WriteReport) String() string {
	return fmt.Sprintf("fenced writes: accepted=%d refused-stale=%d failed=%d stale-accepted=%d unfounded-refusals=%d",
		r.Accepted, r.Refused, r.Failed, len(r.StaleAccepted), len(r.Unfounded))
}

// CheckWrites verifies the writes of a FencedStore against their times: an
// accepted write is stale when a write to its key with a larger token had
// been accepted, its answer back, before it was sent — whatever the order
// of concurrent writes, the larger one was then already in the store. It
// does not modify writes.
func CheckWrites(writes []Write) WriteReport {
	var rep WriteReport
	byKey := map[string][]Write{}
	for _, w := range writes {
		switch {
		case w.Accepted:
			rep.Accepted++
		case w.Refused:
			rep.Refused++
		default:
			rep.Failed++
		}
		byKey[w.Key] = append(byKey[w.Key], w)
	}
	for _, ws := range byKey {
		rep.StaleAccepted = append(rep.StaleAccepted, staleAccepted(ws)...)
		rep.Unfounded = append(rep.Unfounded, unfounded(ws)...)
	}
	return rep
}

// staleAccepted returns the accepted writes of one key sent after a write
// with a larger token had been accepted.
func staleAccepted(ws []Write) []Write {
	done := filter(ws, func(w Write) bool { return w.Accepted })
	slices.SortFunc(done, func(a, b Write) int { return cmp.Compare(a.End, b.End) })
	ends, top := prefixMax(done, func(w Write) time.Duration { return w.End })
	var stale []Write
	for _, w := range done {
		// The accepted writes answered strictly before w was sent.
		if i, _ := slices.BinarySearch(ends, w.Start); i > 0 && top[i-1] > w.Token {
			stale = append(stale, w)
		}
	}
	return stale
}

// unfounded returns the refusals of one key that no write with a larger
// token, sent before the refusal came back, explains.
func unfounded(ws []Write) []Write {
	sent := filter(ws, func(w Write) bool { return !w.Refused })
	slices.SortFunc(sent, func(a, b Write) int { return cmp.Compare(a.Start, b.Start) })
	starts, top := prefixMax(sent, func(w Write) time.Duration { return w.Start })
	var bad []Write
	for _, w := range ws {
		if !w.Refused {
			continue
		}
		// The writes sent no later than w's answer.
		i, found := slices.BinarySearch(starts, w.End)
		for found && i < len(starts) && starts[i] == w.End {
			i++
		}
		if w.Seen <= w.Token || i == 0 || top[i-1] < w.Seen {
			bad = append(bad, w)
		}
	}
	return bad
}

// prefixMax returns, for writes in order, their times (by at) and the
// largest token among the first i+1 of them.
func prefixMax(ws []Write, at func(Write) time.Duration) (times []time.Duration, top []int64) {
	times, top = make([]time.Duration, len(ws)), make([]int64, len(ws))
	for i, w := range ws {
		times[i], top[i] = at(w), w.Token
		if i > 0 {
			top[i] = max(top[i], top[i-1])
		}
	}
	return times, top
}

func filter(ws []Write, keep func(Write) bool) []Write {
	var out []Write
	for _, w := range ws {
		if keep(w) {
			out = append(out, w)
		}
	}
	return out
}

// formatToken is the value a FencedStore writes: the writer's token.
func formatToken(token int64) string { return strconv.FormatInt(token, 10) }
