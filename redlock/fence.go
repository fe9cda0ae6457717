package redlock

import (
	"context"

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
// largest value among the grants. Where granting nodes are behind a key's token, it
// first writes the token back to them, so that a majority holds counters at
// least as large before the lock is handed out — the next majority
// intersects it, and its tokens are larger; a nested acquisition of the same
// owner reads at least the tokens. With clock-derived tokens the grants
// nearly always differ, so this is a round trip of its own; concurrent
// acquisitions share it through the pipelines. It reports false if fewer
// than a majority could be brought up to the tokens: the acquisition must
// then fail, or the next holder's token might not be larger.
func (a *acquisition) fence(ctx context.Context, won *quorum.Tally[[]int64]) (fencing, bool) {
	c, cfg, kss := a.c, &a.cfg, a.kss
	tokens := make([]int64, len(kss))
	behind := make([][]int, len(won.Votes)) // per node, the keys it is behind on
	writeBack := false
	for i := range kss {
		kt := keyTally(won, i)
		token, late := fencePlan(&kt)
		tokens[i] = token
		for _, n := range late {
			behind[n] = append(behind[n], i)
			writeBack = true
		}
	}
	fenced := make([]bool, len(won.Votes))
	for n, v := range won.Votes {
		fenced[n] = v.Outcome == quorum.Granted && len(behind[n]) == 0
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
		fenced[n] = v.Outcome == quorum.Granted
	}
	return fencing{tokens, fenced}, t.Won()
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
