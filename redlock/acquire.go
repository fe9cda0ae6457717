package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// TryLock makes one attempt to acquire key and returns at once: the Lock, or
// an error matching ErrNotObtained (errors.As gives the *QuorumError with
// each node's vote). A failed attempt is undone on every node that may have
// granted it — including those that did not answer in time — in the
// background, detached from ctx.
func (c *Client) TryLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	cfg, err := c.resolve(key, opts)
	if err != nil {
		return nil, err
	}
	if !c.begin() {
		return nil, ErrClosed
	}
	defer c.end()
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(err, ErrNotObtained)
	}
	l, _, err := c.attempt(ctx, key, &cfg, identity{owner: rand.Text()})
	return l, err
}

// Lock acquires key, retrying after a randomized exponential backoff —
// shortened to the holder's remaining lease when that is sooner — until it
// succeeds or ctx ends. When ctx has no deadline, WithMaxWait bounds the
// wait. When it gives up, the error matches ErrNotObtained and ctx.Err() (or
// context.DeadlineExceeded after the maximum wait).
func (c *Client) Lock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	cfg, err := c.resolve(key, opts)
	if err != nil {
		return nil, err
	}
	if !c.begin() {
		return nil, ErrClosed
	}
	defer c.end()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.maxWait)
		defer cancel()
	}
	return c.wait(ctx, key, &cfg)
}

func (c *Client) wait(ctx context.Context, key string, cfg *config) (*Lock, error) {
	id := identity{owner: rand.Text()} // one owner for every attempt: a late grant is ours
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(cfg.retryMin), backoff.WithMaxInterval(cfg.retryMax),
		backoff.WithMultiplier(2), backoff.WithRandomizationFactor(0.5), backoff.WithMaxElapsedTime(0))
	var last error = ErrNotObtained
	for {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, last)
		}
		l, hint, err := c.attempt(ctx, key, cfg, id)
		if err == nil || !errors.Is(err, ErrNotObtained) {
			return l, err
		}
		last = err
		delay := b.NextBackOff()
		if hint > 0 && hint < delay {
			delay = hint
		}
		if err := sleep(ctx, cfg.clock, delay); err != nil {
			return nil, errors.Join(err, last)
		}
	}
}

func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempt runs one acquisition round. On failure it returns the holder's
// shortest remaining lease among the refusals (0 if none) as a retry hint.
func (c *Client) attempt(ctx context.Context, key string, cfg *config, id identity) (*Lock, time.Duration, error) {
	id.hold = rand.Text() // a new hold per attempt: undoing this one never undoes the next
	keys := c.keys(cfg, key)
	decided := make(chan struct{})
	var failed bool
	r := round[int64](c, cfg)
	r.Late = func(n int, v quorum.Vote[int64]) {
		<-decided
		if failed && v.Outcome != quorum.Refused {
			c.releaseOn(context.Background(), n, keys, id, false)
		}
	}
	start := cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[int64] {
		return acquireVote(c.run(ctx, n, acquireScript, keys, id.owner, id.hold, cfg.ttl.Milliseconds()).Int64Slice())
	})
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	var l *Lock
	if t.Won() && cfg.clock.Now().Before(until) {
		if token, ok := c.fence(ctx, cfg, keys, &t); ok && cfg.clock.Now().Before(until) {
			l = c.newLock(key, keys, cfg, id, token, until)
		}
	}
	failed = l == nil
	close(decided)
	if l != nil {
		return l, 0, nil
	}
	if t.Count(quorum.Refused) < len(t.Votes) {
		c.spawn(func() { c.undo(ctx, cfg, keys, id, &t) })
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

// release undoes a holding on every node, in parallel, each call under the
// node timeout, detached from ctx's cancellation. whole releases the lock;
// otherwise only the hold id.hold is dropped (an attempt that failed).
func (c *Client) release(ctx context.Context, cfg *config, keys []string, id identity, whole bool) quorum.Tally[int64] {
	r := round[int64](c, cfg)
	r.Decided = func(t *quorum.Tally[int64]) bool { return t.Won() || t.Count(quorum.Refused) >= t.Need }
	return r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		return releaseVote(c.releaseOn(ctx, n, keys, id, whole))
	})
}

// undo drops a failed attempt's hold on every node that did not refuse it
// (a refusal proves the key holds another owner's value, so ours is not
// there). Pending and failed nodes are included: their write may have landed.
func (c *Client) undo(ctx context.Context, cfg *config, keys []string, id identity, t *quorum.Tally[int64]) {
	r := round[int64](c, cfg)
	r.Decided = func(*quorum.Tally[int64]) bool { return false }
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		if t.Votes[n].Outcome == quorum.Refused {
			return quorum.Vote[int64]{Outcome: quorum.Refused}
		}
		return releaseVote(c.releaseOn(ctx, n, keys, id, false))
	})
}

func (c *Client) releaseOn(ctx context.Context, n int, keys []string, id identity, whole bool) (int64, error) {
	mode := "0"
	if whole {
		mode = "1"
	}
	return c.run(ctx, n, releaseScript, keys[:1], id.owner, id.hold, mode).Int64()
}

func releaseVote(reply int64, err error) quorum.Vote[int64] {
	switch {
	case err != nil:
		return quorum.Vote[int64]{Outcome: quorum.Failed, Err: err}
	case reply == releaseNotOurs:
		return quorum.Vote[int64]{Outcome: quorum.Refused}
	}
	return quorum.Vote[int64]{Outcome: quorum.Granted, Value: reply}
}

// resolve applies opts over the Client's defaults and checks key.
func (c *Client) resolve(key string, opts []Option) (config, error) {
	if key == "" {
		return config{}, invalid("empty key")
	}
	return c.cfg.with(opts)
}

// keys returns the lock key and the fencing counter key: one hash tag, so
// that both live on the same Redis Cluster slot.
func (c *Client) keys(cfg *config, key string) []string {
	lock := cfg.prefix + "{" + key + "}"
	return []string{lock, lock + ":fence"}
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
