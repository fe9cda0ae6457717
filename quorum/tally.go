// Package quorum fans one operation out to N independent nodes and counts
// their votes. It knows nothing of Redis: a node is an index, an operation is
// a function.
//
// A Round calls every node in parallel, each call under its own timeout, and
// returns the Tally as soon as the outcome is settled either way — a slow or
// dead node never delays a decided outcome. Calls still running then are left
// to finish; their votes are handed to the Round's Late function, so that the
// caller can undo whatever a late success did.
package quorum

import (
	"context"
	"fmt"
)

// Outcome is one node's answer to one call.
type Outcome int8

const (
	// Pending: the node had not answered when the round was decided.
	Pending Outcome = iota
	// Granted: the node did what was asked.
	Granted
	// Refused: the node answered and declined (e.g. the key is held by
	// someone else). A refusal is a known answer, unlike a failure.
	Refused
	// Failed: the call returned an error or ran out of time. Whether the
	// node applied the operation is unknown.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Pending:
		return "pending"
	case Granted:
		return "granted"
	case Refused:
		return "refused"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Outcome(%d)", int8(o))
}

// ErrTimeout is the error of a Failed vote whose node did not answer within
// the round's per-node timeout. It matches context.DeadlineExceeded.
var ErrTimeout = fmt.Errorf("quorum: no answer within the node timeout: %w", context.DeadlineExceeded)

// A Vote is one node's answer, with the value it returned.
type Vote[T any] struct {
	Outcome Outcome
	Value   T
	Err     error // why a Failed vote failed; may also explain a refusal
}

// Majority returns the smallest number of nodes that is more than half of n:
// n/2+1 (2 of 3, 3 of 4 or 5). For n = 0 it is 1, so a round of no node is
// never won.
func Majority(n int) int { return n/2 + 1 }

// A Tally is the record of one round: a vote per node, and the number of
// grants that makes the round a success.
type Tally[T any] struct {
	Votes []Vote[T]
	Need  int

	abandoned abandoned // calls still running when the round was decided
}

// abandoned is a set of nodes: a bit mask up to 64 nodes, so that a round
// allocates nothing for it, a slice beyond. The zero value is empty.
type abandoned struct {
	mask uint64
	many []bool
}

// newAbandoned returns the set of every node of n.
func newAbandoned(n int) abandoned {
	if n > 64 {
		many := make([]bool, n)
		for i := range many {
			many[i] = true
		}
		return abandoned{many: many}
	}
	return abandoned{mask: 1<<n - 1} // n == 64: 1<<64 - 1 wraps to all ones
}

func (a *abandoned) clear(node int) {
	if a.many != nil {
		a.many[node] = false
		return
	}
	a.mask &^= 1 << node
}

func (a *abandoned) has(node int) bool {
	if a.many != nil {
		return a.many[node]
	}
	return node >= 0 && node < 64 && a.mask&(1<<node) != 0
}

// Abandoned reports whether node's call was still running when the round
// was decided — its vote is Pending, or Failed by the timeout or the end of
// the round's context — so that its real answer will reach Late.
func (t *Tally[T]) Abandoned(node int) bool {
	return t.abandoned.has(node)
}

// Count returns the number of votes with outcome o.
func (t *Tally[T]) Count(o Outcome) int {
	n := 0
	for _, v := range t.Votes {
		if v.Outcome == o {
			n++
		}
	}
	return n
}

// Won reports whether at least Need nodes granted.
func (t *Tally[T]) Won() bool { return t.Count(Granted) >= t.Need }

// Lost reports whether Need grants can no longer be reached, even if every
// pending node grants.
func (t *Tally[T]) Lost() bool { return t.Count(Granted)+t.Count(Pending) < t.Need }

// Settled reports whether the round is won or lost.
func (t *Tally[T]) Settled() bool { return t.Won() || t.Lost() }

// String summarises the tally, e.g. "2 of 5 granted, 1 refused, 2 failed, need 3".
func (t *Tally[T]) String() string {
	s := fmt.Sprintf("%d of %d granted", t.Count(Granted), len(t.Votes))
	for _, o := range []Outcome{Refused, Failed, Pending} {
		if n := t.Count(o); n > 0 {
			s += fmt.Sprintf(", %d %s", n, o)
		}
	}
	return s + fmt.Sprintf(", need %d", t.Need)
}
