package redlock

import (
	"context"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// fence returns the fencing token of a won round: the largest counter among
// the grants. Where granting nodes are behind it, it first writes the token
// back to them, so that a majority holds a counter at least as large before
// the lock is handed out — the next majority intersects it, and its token is
// larger; a nested acquisition of the same owner reads at least the token.
// With clock-derived tokens the grants nearly always differ, so this is a
// round trip of its own; concurrent acquisitions share it through the
// pipelines. It reports false if fewer than a majority could be brought up
// to the token: the acquisition must then fail, or the next holder's token
// might not be larger.
//
// It also returns which nodes are known to hold a counter at least as large
// as the token: Unlock need not raise theirs.
func (c *Client) fence(ctx context.Context, cfg *config, ks *keyset, won *quorum.Tally[int64]) (int64, bool, []bool) {
	token, behind := fencePlan(won)
	fenced := make([]bool, len(won.Votes))
	for n, v := range won.Votes {
		fenced[n] = v.Outcome == quorum.Granted && v.Value >= token
	}
	if len(behind) == 0 {
		return token, true, fenced
	}
	r := round[int64](c, cfg)
	r.Decided = func(t *quorum.Tally[int64]) bool { return t.Won() }
	raise := newScriptCall(fenceScript, []string{ks.Fence}, token, cfg.retention.Milliseconds())
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[int64] {
		switch v := won.Votes[n]; {
		case v.Outcome != quorum.Granted:
			return quorum.Vote[int64]{Outcome: quorum.Refused}
		case v.Value >= token:
			return v
		}
		have, err := c.exec(ctx, n, raise).Int64()
		if err != nil {
			return quorum.Vote[int64]{Outcome: quorum.Failed, Err: err}
		}
		return quorum.Vote[int64]{Outcome: quorum.Granted, Value: have}
	})
	for n, v := range t.Votes {
		fenced[n] = v.Outcome == quorum.Granted && v.Value >= token
	}
	return token, t.Won(), fenced
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
