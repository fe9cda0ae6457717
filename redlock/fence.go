package redlock

import (
	"context"
	"slices"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A fencing is the fencing of a won round: the token of each key, and the
// nodes known to hold counters at least as large as every key's token —
// Unlock need not raise theirs.
type fencing struct {
	tokens []int64
	nodes  []bool
}

// fence returns the fencing of a won round: per key, the token is the
// largest value among the grants. Where granting nodes are behind a key's
// token and their grant is not covered by their clock (coverWindow), it
// first writes the token back to them, so that a majority holds counters at
// least as large, or will issue larger tokens once this holding leaves
// them, before the lock is handed out — the next majority intersects it,
// and its tokens are larger; a nested acquisition of the same owner reads
// at least the tokens. An uncontended writer's grants are clock-derived and
// near each other, so it returns without a round of its own. It reports
// false if fewer than a majority could be brought up to the tokens: the
// acquisition must then fail, or the next holder's token might not be
// larger.
func (a *acquisition) fence(ctx context.Context, won *quorum.Tally[[]int64]) (fencing, bool) {
	c, cfg, kss := a.c, &a.cfg, a.kss
	tokens := make([]int64, len(kss))
	var behind [][]int // per node, the keys it is behind on; nil while none is
	writeBack := false
	window := a.coverWindow()
	clock := a.clockGrants(won, window)
	for i := range kss {
		kt := keyTally(won, i)
		token, late := fencePlan(&kt, clock, window)
		tokens[i] = token
		for _, n := range late {
			if behind == nil {
				behind = make([][]int, len(won.Votes))
			}
			behind[n] = append(behind[n], i)
			writeBack = true
		}
	}
	fenced := make([]bool, len(won.Votes))
	for n, v := range won.Votes {
		fenced[n] = v.Outcome == quorum.Granted && (behind == nil || len(behind[n]) == 0) && upTo(v.Value, tokens, nil)
	}
	if !writeBack {
		return fencing{tokens, fenced}, true
	}
	r := round[struct{}](c, cfg)
	r.Decided = func(t *quorum.Tally[struct{}]) bool { return t.Won() }
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[struct{}] {
		if won.Votes[n].Outcome != quorum.Granted {
			return quorum.Vote[struct{}]{Outcome: quorum.Refused}
		}
		if len(behind[n]) == 0 {
			return quorum.Vote[struct{}]{Outcome: quorum.Granted}
		}
		// One call raises every key this node is behind on.
		keys := make([]string, len(behind[n]))
		args := commonArgs(len(behind[n]), "", "", 0, cfg.retention, "", 0)
		for k, i := range behind[n] {
			keys[k] = kss[i].Fence
			args = append(args, tokens[i])
		}
		raise := newScriptCall(fenceScript, keys, args...)
		if err := c.exec(ctx, n, raise).Err(); err != nil {
			return quorum.Vote[struct{}]{Outcome: quorum.Failed, Err: err}
		}
		return quorum.Vote[struct{}]{Outcome: quorum.Granted}
	})
	for n, v := range t.Votes {
		fenced[n] = v.Outcome == quorum.Granted && upTo(won.Votes[n].Value, tokens, behind[n])
	}
	return fencing{tokens, fenced}, t.Won()
}

// upTo reports whether a grant's counters, values (per key), hold every
// key's token once the keys raised (their indexes) were written back:
// Unlock need not raise them on its node.
func upTo(values, tokens []int64, raised []int) bool {
	for i, token := range tokens {
		if values[i] < token && !slices.Contains(raised, i) {
			return false
		}
	}
	return true
}

// clockGrants returns, per node of won, whether its grant's tokens all came
// from its clock (acquire.lua: grantedClock); nil when window is 0, none
// can be covered.
func (a *acquisition) clockGrants(won *quorum.Tally[[]int64], window int64) []bool {
	if window <= 0 {
		return nil
	}
	clock := make([]bool, len(won.Votes))
	for n, v := range won.Votes {
		clock[n] = v.Outcome == quorum.Granted && len(v.Value) > len(a.kss) && v.Value[len(a.kss)] == 1
	}
	return clock
}

// coverWindow is how far, in µs, a writer's clock-derived grant may be
// behind its holding's token on a node without the token being written
// back there: half the TTL less the drift allowance, or 0 — every node
// behind is written back — for a hold that a later hold of the same owner
// may nest in (WithOwner), a reader, or a semaphore's permit.
//
// Why the next holding's token is larger all the same (docs/SAFETY.md,
// "Tokens without a write-back round"). Let node x grant this holding H at
// its clock c (µs) with token t = c — its counter was below c — and let T
// be H's token, T − t ≤ window. x's next grant to another owner comes once
// H's lock is gone from x, which happens in one of three ways:
//
//   - H's release ran on x: release.lua raises x's counter to T in the
//     same script that deletes the lock (Unlock sends T to every node not
//     known to hold it, fencing.nodes), so the next token is at least
//     T + 1. A nested hold cannot release H's: only H's owner holds, and
//     an owner that can nest keeps the write-back.
//   - H's lease ran out on x: its hold's lease end is c/1000 + TTL ms by
//     x's clock, and renewals only move it later (extend.lua sets now +
//     the same TTL; a hold's lease is its own, lease_holds), so x's clock
//     reads at least c + TTL − 1 ms when it grants again, and the next
//     token — at least that clock — exceeds T by more than half the TTL,
//     unless x's clock stepped back by as much in between.
//   - x restarted and lost it: x counts again only after the restart guard
//     (at least the TTL of the asking acquisition, on the Client's clock,
//     with the drift allowance), and its counter is gone or kept, so its
//     next token is at least its clock then — at least c plus the guard
//     less the drift, above T as before. This is the argument of the
//     restart case of a written-back counter, with x's own clock in place
//     of another master's: no more is assumed of the clocks.
//
// A reader granted by x after H takes the larger of x's counter and clock
// (counter_read), which the same three cases put at or above T; a nested
// hold, the counter its owner's fresh grant on x set, above T likewise.
// So a later holding's majority, which meets H's at a node either written
// back or covered, issues a larger token there. Not covered, and written
// back before the Lock is returned: a grant whose token is a counter's
// value (counter + 1 above the clock, a re-sent or nested hold), a grant
// further behind than the window (clocks far apart, a slow round), every
// grant of an owner that may nest (a nested hold must read at least this
// token at once, before H's lease or release moved anything), readers'
// grants (their token is a counter) and semaphores' permits.
func (a *acquisition) coverWindow() int64 {
	if !a.kind.clockTokens() || a.id.reentrant {
		return 0
	}
	return coverWindow(a.cfg.ttl, a.cfg.driftFactor)
}

// coverWindow is half of ttl less its drift allowance, in µs (0 if none).
func coverWindow(ttl time.Duration, driftFactor float64) int64 {
	return max(0, (ttl/2 - clock.Drift(ttl, driftFactor)).Microseconds())
}

// keyTally is key i's part of an acquisition's tally: each grant's token
// for that key.
func keyTally(t *quorum.Tally[[]int64], i int) quorum.Tally[int64] {
	kt := quorum.Tally[int64]{Votes: make([]quorum.Vote[int64], len(t.Votes)), Need: t.Need}
	for n, v := range t.Votes {
		kt.Votes[n] = quorum.Vote[int64]{Outcome: v.Outcome, Err: v.Err}
		if v.Outcome == quorum.Granted {
			kt.Votes[n].Value = v.Value[i]
		}
	}
	return kt
}

// fencePlan returns the token of a won round for one key — the largest
// value among the grants — and the granting nodes whose counters must be
// raised to it before the lock is handed out: those behind it, except a
// node whose grant came from its clock (clock[n]; clock may be nil) and is
// behind by at most window µs (coverWindow).
func fencePlan(won *quorum.Tally[int64], clock []bool, window int64) (token int64, behind []int) {
	token = maxGranted(won)
	for n, v := range won.Votes {
		if v.Outcome != quorum.Granted || v.Value >= token {
			continue
		}
		if clock != nil && clock[n] && token-v.Value <= window {
			continue
		}
		behind = append(behind, n)
	}
	return token, behind
}

// maxGranted is the largest counter among the grants.
func maxGranted(t *quorum.Tally[int64]) int64 {
	var m int64
	for _, v := range t.Votes {
		if v.Outcome == quorum.Granted {
			m = max(m, v.Value)
		}
	}
	return m
}
