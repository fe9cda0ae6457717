package redlock

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// attempt runs one acquisition round; ticket is "" for a one-shot attempt
// that does not queue. On failure it returns the holder's shortest remaining
// lease among the refusals (0 if none) as a retry hint.
//
// gone, for a waiting Lock, is set once that Lock has given up: a refusal
// arriving after it has put the owner back in that node's waiters' queue,
// which must be undone, or the stale first in line would refuse everyone.
//
// kss has one keyset per key: several for LockMany, whose script takes all
// of them or none on each node, so the whole round is that of one lock.
func (c *Client) attempt(ctx context.Context, keys []string, kss keysets, cfg *config, id identity, ticket string, gone *atomic.Bool) (*Lock, time.Duration, error) {
	id.hold = rand.Text() // a new hold per attempt: undoing this one never undoes the next
	key := strings.Join(keys, ",")
	decided := make(chan struct{})
	var l *Lock
	r := round[[]int64](c, cfg)
	r.Late = func(n int, v quorum.Vote[[]int64]) {
		<-decided
		switch {
		case l == nil: // the attempt failed; undo skipped n while its call ran
			if v.Outcome != quorum.Refused {
				c.releaseOn(context.Background(), cfg, n, kss, id, undoHold, nil)
			} else if gone != nil && gone.Load() {
				c.leaveOn(context.Background(), n, kss, id)
			}
		case l.answered(n):
			// Unlock skipped n while its call ran: release it now — a late
			// refusal too, since it put the owner in n's waiters' queue, and
			// a stale first in line there would refuse everyone else.
			c.releaseOn(context.Background(), cfg, n, kss, id, l.releaseKind(), l.tokens)
		} // otherwise Unlock, still to come, covers n
	}
	calls := c.acquireCalls(kss, cfg, id, ticket)
	start := cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]int64] {
		if !cfg.detectRestarts() {
			if err := c.nodes[n].vet(ctx); err != nil {
				return quorum.Vote[[]int64]{Outcome: quorum.Failed, Err: err}
			}
		}
		reply, err := c.exec(ctx, n, calls[n]).Slice()
		return c.acquireVote(n, cfg, len(kss), reply, err)
	})
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	// A lock with less validity left than the loss margin would be declared
	// lost at once: the attempt fails instead.
	usable := until.Add(-cfg.lossMargin())
	nodeFailures(ctx, c, cfg.observers, "lock", key, &t)
	if t.Won() && cfg.clock.Now().Before(usable) {
		if tokens, ok, fenced := c.fence(ctx, cfg, kss, &t); ok && cfg.clock.Now().Before(usable) {
			l = c.newLock(ctx, keys, kss, cfg, id, tokens, until, &t, fenced)
		}
	}
	close(decided)
	if l != nil {
		return l, 0, nil
	}
	if t.Count(quorum.Refused) < len(t.Votes) {
		c.spawn(func() { c.undo(ctx, cfg, kss, id, &t) })
	}
	if t.Won() && c.isClosed() { // won, but the Client closed meanwhile
		return nil, 0, ErrClosed
	}
	return nil, retryHint(&t), quorumError(c, "lock", key, ErrNotObtained, &t)
}

// acquireCalls returns each node's acquire.lua call — racquire.lua's for a
// reader: with restart detection on, each carries the node's LASTSAVE as
// this Client last saw it.
func (c *Client) acquireCalls(kss keysets, cfg *config, id identity, ticket string) []*scriptCall {
	s := acquireScript
	if id.kind == reader {
		s = racquireScript
	}
	base := newScriptCall(s, kss.acquireKeys(), id.owner, id.hold,
		cfg.ttl.Milliseconds(), ticket, cfg.queueLease().Milliseconds(), cfg.retention.Milliseconds(), "")
	calls := make([]*scriptCall, len(c.nodes))
	for n, node := range c.nodes {
		calls[n] = base
		if cfg.detectRestarts() {
			calls[n] = base.withLast(node.lastSaved())
		}
	}
	return calls
}

// acquireVote reads node n's reply to acquire.lua for an attempt on keys
// keys: a grant's value is the token of each key; a refusal's, the holder's
// remaining lease.
func (c *Client) acquireVote(n int, cfg *config, keys int, reply []any, err error) quorum.Vote[[]int64] {
	if err != nil {
		return quorum.Vote[[]int64]{Outcome: quorum.Failed, Err: err}
	}
	granted, ok1 := replyInt(reply, 0)
	first, ok := replyInt(reply, 1)
	ok = ok && ok1
	values := append(make([]int64, 0, keys), first)
	for i := 1; ok && granted == 1 && i < keys; i++ {
		var v int64
		v, ok = replyInt(reply, 1+i)
		values = append(values, v)
	}
	if !ok {
		return quorum.Vote[[]int64]{Outcome: quorum.Failed, Err: fmt.Errorf("redlock: unexpected reply to acquire: %v", reply)}
	}
	if granted != 1 {
		return quorum.Vote[[]int64]{Outcome: quorum.Refused, Value: values}
	}
	if guard := cfg.restartGuard(); guard > 0 {
		if err := c.nodes[n].admit(startOf(reply, keys), guard, cfg.clock.Now()); err != nil {
			// Not counted; like any failure, undone if the attempt fails.
			return quorum.Vote[[]int64]{Outcome: quorum.Failed, Value: values, Err: err}
		}
	}
	return quorum.Vote[[]int64]{Outcome: quorum.Granted, Value: values}
}

func replyInt(reply []any, i int) (int64, bool) {
	if i >= len(reply) {
		return 0, false
	}
	v, ok := reply[i].(int64)
	return v, ok
}

// retryHint is the shortest remaining lease among the refusals.
func retryHint(t *quorum.Tally[[]int64]) time.Duration {
	var hint time.Duration
	for _, v := range t.Votes {
		if v.Outcome != quorum.Refused {
			continue
		}
		if d := time.Duration(v.Value[0]) * time.Millisecond; d > 0 && (hint == 0 || d < hint) {
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

// secondsBetween returns to − from, two decimal counts of seconds, or 0 if
// either does not parse.
func secondsBetween(from, to string) time.Duration {
	f, err1 := strconv.ParseInt(from, 10, 64)
	t, err2 := strconv.ParseInt(to, 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(t-f) * time.Second
}
