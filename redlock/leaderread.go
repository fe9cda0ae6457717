package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A mark is one master's record of a name's leader (leader.lua): the hold's
// owner, its term and value, and the lock's remaining lease there.
type mark struct {
	owner string
	term  int64
	value string
	left  time.Duration
}

// same reports whether two masters record the same leadership.
func (m mark) same(o mark) bool { return m.owner == o.owner && m.term == o.term && m.value == o.value }

// Leader reports who leads name now, as a majority of masters record it:
// the leader's value and term. It reads every master in parallel, each under
// the node timeout, and answers as soon as a majority agree on one
// leadership whose lease is still live on each of them, minus the drift
// (WithDriftFactor). It returns ErrNoLeader when no such majority exists —
// nobody leads, the last leader resigned or its lease ran out, too few
// masters answered — and when the majority's term is older than one this
// Client already reported for name (by Leader or Observe): a Client's
// reports never go back in term. It reads names under the Client's prefix.
// Bad input (a nil ctx, an empty or too long name) is refused with
// ErrInvalid; after Close it returns ErrClosed.
func (c *Client) Leader(ctx context.Context, name string) (Leader, error) {
	if ctx == nil {
		return Leader{}, errNilContext
	}
	if err := checkKey(name); err != nil {
		return Leader{}, err
	}
	if !c.begin() {
		return Leader{}, ErrClosed
	}
	defer c.end()
	ld, _, err := c.readLeader(ctx, name)
	return ld, err
}

// readLeader is one quorum read of name's leader (Leader), which also
// returns how long the leader's lease lasts at least. It runs inside a
// begin/end pair.
func (c *Client) readLeader(ctx context.Context, name string) (Leader, time.Duration, error) {
	cfg := &c.cfg
	kn := Keys(cfg.prefix, name)
	sc := newScriptCall(leaderScript, []string{kn.Lock})
	start := cfg.clock.Now()
	r := round[mark](c, cfg)
	r.Decided = func(t *quorum.Tally[mark]) bool { _, ok := agreed(t); return ok }
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[mark] {
		reply, err := c.exec(ctx, n, sc).Slice()
		return markVote(reply, err)
	})
	if err := ctx.Err(); err != nil {
		return Leader{}, 0, fmt.Errorf("redlock: leader of %s: %w", shortKey(name), err)
	}
	m, ok := agreed(&t)
	if !ok {
		return Leader{}, 0, ErrNoLeader
	}
	// The shortest lease among the majority, less the drift, counted from
	// before the read: a lease that may have ended leads no more.
	until := clock.Validity(start, m.left, cfg.driftFactor)
	left := clock.Remaining(cfg.clock.Now(), until)
	if left <= 0 || !c.reported(name, m.term) {
		return Leader{}, 0, ErrNoLeader
	}
	return Leader{Value: m.value, Term: m.term}, left, nil
}

// markVote reads one master's reply to leader.lua: a Granted vote carries
// its mark; a Refused one, no leader there.
func markVote(reply []any, err error) quorum.Vote[mark] {
	if err != nil {
		return quorum.Vote[mark]{Outcome: quorum.Failed, Err: err}
	}
	if len(reply) == 0 {
		return quorum.Vote[mark]{Outcome: quorum.Refused}
	}
	if len(reply) == 4 {
		owner, ok1 := reply[0].(string)
		termText, ok2 := reply[1].(string)
		value, ok3 := reply[2].(string)
		pttl, ok4 := reply[3].(int64)
		term, err := strconv.ParseInt(termText, 10, 64)
		if ok1 && ok2 && ok3 && ok4 && err == nil {
			m := mark{owner: owner, term: term, value: value, left: time.Duration(pttl) * time.Millisecond}
			return quorum.Vote[mark]{Outcome: quorum.Granted, Value: m}
		}
	}
	return quorum.Vote[mark]{Outcome: quorum.Failed, Err: fmt.Errorf("redlock: unexpected reply to leader: %v", reply)}
}

// agreed returns the leadership a majority of t's votes record, with the
// shortest of their leases; ok is false while there is none.
func agreed(t *quorum.Tally[mark]) (m mark, ok bool) {
	for i, v := range t.Votes {
		if v.Outcome != quorum.Granted || v.Value.left <= 0 {
			continue
		}
		m, count := v.Value, 0
		for _, w := range t.Votes[i:] {
			if w.Outcome == quorum.Granted && w.Value.left > 0 && w.Value.same(m) {
				count++
				m.left = min(m.left, w.Value.left)
			}
		}
		if count >= t.Need {
			return m, true
		}
	}
	return mark{}, false
}

// reported records that term of name is reported to a caller of this Client
// and says whether it may be: false when a larger term of name was already
// reported (the Client's high-water mark, in c.terms).
func (c *Client) reported(name string, term int64) bool {
	for {
		old, loaded := c.terms.LoadOrStore(name, term)
		if !loaded {
			return true
		}
		switch high := old.(int64); {
		case term < high:
			return false
		case term == high || c.terms.CompareAndSwap(name, old, term):
			return true
		}
	}
}
