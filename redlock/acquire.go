package redlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/seed818c56a1/quorumlock/clock"
)

// TryLock makes one attempt to acquire key and returns once it is decided:
// a majority granted within the validity, or no majority can. It never
// jumps the line: while anyone waits for key, it is refused even on a free
// lock. A failed attempt returns an error matching ErrNotObtained (errors.As
// gives the *QuorumError with every node's vote) and is undone in the
// background on every node that may have granted it. Bad input (a nil ctx,
// an empty or too long key, a bad option) is refused with ErrInvalid,
// nothing sent; a closed Client returns ErrClosed. With ctx already ended
// nothing is sent and the error matches ctx.Err() and ErrNotObtained; a ctx
// that ends during the attempt cuts its node calls, which then fail their
// votes. No node call waits past the node timeout.
func (c *Client) TryLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.tryLock(ctx, []string{key}, opts, writer)
}

// tryLock is TryLock of every key of keys at once, for a holding of kind.
func (c *Client) tryLock(ctx context.Context, keys []string, opts []Option, kind holdKind) (*Lock, error) {
	a, err := c.newAcquisition(ctx, keys, opts, kind)
	if err != nil {
		return nil, err
	}
	return a.tryOnce(ctx)
}

// tryOnce makes one attempt, reports it to the observers, and releases the
// Client's count of calls in progress that newAcquisition took.
func (a *acquisition) tryOnce(ctx context.Context) (*Lock, error) {
	defer a.c.end()
	if err := ctx.Err(); err != nil {
		return nil, a.stopped(ctx, err, ErrNotObtained)
	}
	ctx, done := a.c.observe(ctx, &a.cfg, a.key, false)
	l, _, err := a.attempt(ctx, &oneShot)
	done(l, err)
	return l, err
}

// oneShot is the waiter of every one-shot attempt (TryLock and the other
// Try calls): not in line, never given up, never written — shared, so that
// an attempt allocates none.
var oneShot waiter

// observe tells cfg's observers — the Client's and the call's — that an
// acquisition of key begins, and returns the function that tells them how it
// ended.
func (c *Client) observe(ctx context.Context, cfg *config, key string, wait bool) (context.Context, func(*Lock, error)) {
	obs := cfg.observers
	if len(obs) == 0 {
		return ctx, func(*Lock, error) {}
	}
	start := c.cfg.clock.Now()
	ctx = obs.acquireStart(ctx, key, wait)
	return ctx, func(l *Lock, err error) { obs.acquireDone(ctx, key, l, c.cfg.clock.Since(start), err) }
}

// Lock acquires key, waiting in line until it succeeds or ctx ends; when
// ctx has no deadline, WithMaxWait bounds the wait (DefaultMaxWait).
// Waiters are served in the order of their first attempt, the same on
// every node, and Unlock wakes the first at once.
//
// Bad input is refused with ErrInvalid, nothing sent. When ctx ends (or the
// maximum wait runs out) or the Client closes, Lock leaves the waiters'
// line and returns one line matching ctx.Err() (context.DeadlineExceeded
// for the maximum wait) or ErrClosed, and ErrNotObtained with the last
// attempt's *QuorumError. It returns at once, with the attempt's error,
// when so many nodes fail for a lasting reason (a replica, ErrStartUnknown,
// a command refused to the user, a wrong password, an untrusted TLS
// certificate, ErrSameCluster) that no majority can ever answer; timeouts,
// refused connections, held locks and masters within the restart guard are
// waited for.
func (c *Client) Lock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.lock(ctx, []string{key}, opts, writer)
}

// lock is Lock of every key of keys at once, for a holding of kind.
func (c *Client) lock(ctx context.Context, keys []string, opts []Option, kind holdKind) (*Lock, error) {
	a, err := c.newAcquisition(ctx, keys, opts, kind)
	if err != nil {
		return nil, err
	}
	return a.waitInLine(ctx)
}

// waitInLine makes attempts until one succeeds or ctx ends (retry), told to the
// observers and bounded by the maximum wait when ctx has no deadline, and
// ends the call newAcquisition counted.
func (a *acquisition) waitInLine(ctx context.Context) (*Lock, error) {
	defer a.c.end()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.cfg.maxWait, errMaxWait(a.cfg.maxWait))
		defer cancel()
	}
	ctx, done := a.c.observe(ctx, &a.cfg, a.key, true)
	l, err := a.retry(ctx)
	done(l, err)
	return l, err
}

// refusedByMajority reports whether err, a failed attempt's, was refused
// by a majority of the nodes: the key is held, or others wait ahead, on
// most of them, and its release or their departure will be announced. An
// attempt that failed otherwise — grants split among waiters, undone
// without a word — is retried on the backoff.
func refusedByMajority(err error) bool {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return false
	}
	n := 0
	for _, v := range qe.Votes {
		if v.Outcome == Refused {
			n++
		}
	}
	return n >= qe.Need
}

// retry makes attempts, in line, until one succeeds or ctx ends; between
// attempts it sleeps a backoff, shortened to the holder's remaining lease,
// or until a release is announced on its line's channels (line). Once
// those announcements are known to reach it (wakeups.reaches) since before an
// attempt, a majority's refusal of that attempt needs no quick retry — the release
// wakes the waiter it names, and the others wait for theirs: the backoff
// is then at least the longest retry delay, the fallback for a lost
// wake-up.
func (a *acquisition) retry(ctx context.Context) (*Lock, error) {
	c, cfg := a.c, &a.cfg
	w := &waiter{ticket: strconv.FormatInt(cfg.clock.Now().UnixMilli(), 10)}
	b := cfg.backoff()
	channels := a.kind.line(a.kss).channels()
	var wake <-chan struct{}
	stop := func() {}
	defer func() { stop() }()
	listen := func() { wake, stop = c.wakeups.register(channels, a.kind.member(a.id.owner)) }
	if c.wakeups.reaches(channels) { // other waiters of this Client listen already
		listen()
	}
	var last error = ErrNotObtained
	for {
		if err := ctx.Err(); err != nil {
			return nil, a.giveUp(ctx, w, a.stopped(ctx, err, last))
		}
		heard := wake != nil && a.kind.wakeAfterRefusal() && c.wakeups.reaches(channels)
		l, hint, err := a.attempt(ctx, w)
		if err == nil { // the holder stays in the waiters' line until Unlock takes it out
			return l, nil
		}
		// Waiting cannot help an attempt that failed for another reason
		// than the quorum, nor one that too many nodes fail for good.
		if !errors.Is(err, ErrNotObtained) || hopeless(err) {
			return nil, a.giveUp(ctx, w, err)
		}
		last, w.queued = lastWhole(ctx, err, last), true
		if wake == nil {
			listen()
		}
		delay := b.NextBackOff()
		if heard && refusedByMajority(err) {
			delay = max(delay, cfg.retryMax)
		}
		if hint > 0 && hint < delay {
			delay = hint
		}
		if err := c.sleep(ctx, cfg.clock, delay, wake); err != nil {
			return nil, a.giveUp(ctx, w, a.stopped(ctx, err, last))
		}
	}
}

// sleep waits for d, a wake-up, the end of ctx, or Close.
func (c *Client) sleep(ctx context.Context, clk clock.Clock, d time.Duration, wake <-chan struct{}) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-wake:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
	return nil
}

func (cfg *config) backoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(cfg.retryMin), backoff.WithMaxInterval(cfg.retryMax),
		backoff.WithMultiplier(2), backoff.WithRandomizationFactor(0.5), backoff.WithMaxElapsedTime(0))
}
