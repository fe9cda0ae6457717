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
func (c *Client) fence(cfg *config, ks *keyset, won *quorum.Tally[int64]) (int64, []bool) {
	token, behind := fencePlan(won)
	fenced := make([]bool, len(won.Votes))
	for n, v := range won.Votes {
		fenced[n] = v.Outcome == quorum.Granted && v.Value >= token
	}
	if len(behind) > 0 {
		raise := newScriptCall(fenceScript, []string{ks.Fence}, token, cfg.retention.Milliseconds())
		for _, n := range behind {
			c.spawn(func() { c.execAlone(context.Background(), n, raise) })
		}
	}
	return token, fenced
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
