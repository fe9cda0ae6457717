package redlock

import (
	"context"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// fence returns the fencing token of a won round — the largest value among
// the grants — and which nodes are known to hold a counter at least as large
// (Unlock need not raise theirs). Granting nodes that are behind get the
// token written back in the background: the acquisition does not wait for
// it. Until it lands, such a node still holds this lock, so it cannot grant
// the key to anyone; it can again only once the lock was released there —
// and the release raises its counter to the token too — or expired, at least
// a TTL after the grant, when its clock-derived value exceeds the token as
// long as the masters' clocks differ by less than that (package doc).
//
// Each key of a holding is fenced on its own: tokens has one per key, and a
// node is marked in fenced when it holds every key's.
func (c *Client) fence(cfg *config, kss keysets, won *quorum.Tally[[]int64]) (tokens []int64, fenced []bool) {
	tokens = make([]int64, len(kss))
	fenced = make([]bool, len(won.Votes))
	for n, v := range won.Votes {
		fenced[n] = v.Outcome == quorum.Granted
	}
	for i := range kss {
		kt := keyTally(won, i)
		token, behind := fencePlan(&kt)
		tokens[i] = token
		for n, v := range kt.Votes {
			fenced[n] = fenced[n] && v.Value >= token
		}
		if len(behind) > 0 {
			raise := newScriptCall(fenceScript, []string{kss[i].Fence}, token, cfg.retention.Milliseconds())
			for _, n := range behind {
				c.spawn(func() { c.execAlone(context.Background(), n, raise) })
			}
		}
	}
	return tokens, fenced
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

// fencePlan returns the token of a won round — the largest counter among the
// grants — and the granting nodes whose counters are behind it.
func fencePlan(won *quorum.Tally[int64]) (token int64, behind []int) {
	token = maxGranted(won)
	for n, v := range won.Votes {
		if v.Outcome == quorum.Granted && v.Value < token {
			behind = append(behind, n)
		}
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
