package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// attempt runs one acquisition round; ticket is "" for a one-shot attempt
// that does not queue. On failure it returns the holder's shortest remaining
// lease among the refusals (0 if none) as a retry hint; on success, 0 if
// every node granted (and so dropped any queue entry of ours), else 1.
func (c *Client) attempt(ctx context.Context, key string, ks *keyset, cfg *config, id identity, ticket string) (*Lock, time.Duration, error) {
	id.hold = rand.Text() // a new hold per attempt: undoing this one never undoes the next
	decided := make(chan struct{})
	var failed bool
	r := round[int64](c, cfg)
	r.Late = func(n int, v quorum.Vote[int64]) {
		<-decided
		if failed && v.Outcome != quorum.Refused {
			c.releaseOn(context.Background(), n, ks, id, false, 0)
		}
	}
	start := cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[int64] {
		return acquireVote(c.run(ctx, n, acquireScript, ks.acquireKeys(),
			id.owner, id.hold, cfg.ttl.Milliseconds(), ticket, cfg.queueLease().Milliseconds()).Int64Slice())
	})
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	var l *Lock
	if t.Won() && cfg.clock.Now().Before(until) {
		if token, ok := c.fence(ctx, cfg, ks, &t); ok && cfg.clock.Now().Before(until) {
			l = c.newLock(key, ks, cfg, id, token, until)
		}
	}
	failed = l == nil
	close(decided)
	if l != nil {
		if t.Count(quorum.Granted) < len(t.Votes) {
			return l, 1, nil
		}
		return l, 0, nil
	}
	if t.Count(quorum.Refused) < len(t.Votes) {
		c.spawn(func() { c.undo(ctx, cfg, ks, id, &t) })
	}
	if t.Won() && c.isClosed() { // won, but the Client closed meanwhile
		return nil, 0, ErrClosed
	}
	return nil, retryHint(&t), quorumError(c, "lock", key, ErrNotObtained, &t)
}

func acquireVote(reply []int64, err error) quorum.Vote[int64] {
	switch {
	case err != nil:
		return quorum.Vote[int64]{Outcome: quorum.Failed, Err: err}
	case len(reply) != 2:
		return quorum.Vote[int64]{Outcome: quorum.Failed, Err: errors.New("redlock: unexpected reply to acquire")}
	case reply[0] == 1:
		return quorum.Vote[int64]{Outcome: quorum.Granted, Value: reply[1]}
	}
	return quorum.Vote[int64]{Outcome: quorum.Refused, Value: reply[1]}
}

// retryHint is the shortest remaining lease among the refusals.
func retryHint(t *quorum.Tally[int64]) time.Duration {
	var hint time.Duration
	for _, v := range t.Votes {
		if d := time.Duration(v.Value) * time.Millisecond; v.Outcome == quorum.Refused && d > 0 && (hint == 0 || d < hint) {
			hint = d
		}
	}
	return hint
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
