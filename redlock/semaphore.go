package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// MaxLimit bounds the limit of a semaphore (Acquire): each permit is a key
// on the nodes, and a waiter may try every one of them.
const MaxLimit = 1024

// Acquire takes one of limit permits of name, waiting until one is free or
// ctx ends; when ctx has no deadline, WithMaxWait bounds the wait. The Lock
// it returns holds that permit: Unlock gives it back, and it is renewed,
// extended and lost like any Lock. Key and Keys name the semaphore; Token is
// the permit's fencing token.
//
// Permit i of name is a mutex on its own key (its names share name's hash
// tag: <prefix>{name}:permit:i), acquired through the quorum exactly as Lock
// acquires a key. Each round tries the permits in turn, from a random one,
// and takes the first that a majority grants; a waiter queues on every
// permit it tries, so the oldest waiter is first in line on all of them, and
// is woken when any is given back. With every holder of name using the same
// limit, at most limit holders exist at any time: each holds a distinct
// permit among limit, and no permit has two holders (see the package doc).
//
// The limit is fixed per name: each grant records it on its node, and an
// attempt with another limit is refused by every node where a permit of the
// recorded limit is still held — which includes a node of each holder's
// majority — with an error matching ErrInvalid; what the other nodes granted
// is undone. Once no permit is held, a new limit may be used. A limit outside
// [1, MaxLimit] and a bad name are refused before anything is sent.
func (c *Client) Acquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	if err := checkLimit(name, limit); err != nil {
		return nil, err
	}
	cfg, err := c.enter([]string{name}, opts)
	if err != nil {
		return nil, err
	}
	defer c.end()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.maxWait)
		defer cancel()
	}
	ctx, done := c.observe(ctx, name, true)
	l, err := c.acquirePermit(ctx, name, limit, &cfg, true)
	done(l, err)
	return l, err
}

// TryAcquire makes one attempt to take one of limit permits of name: it
// tries each permit once, from a random one, and returns the first granted,
// or an error matching ErrNotObtained. It does not queue, and is refused
// while Acquire callers wait. It refuses what Acquire refuses.
func (c *Client) TryAcquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	if err := checkLimit(name, limit); err != nil {
		return nil, err
	}
	cfg, err := c.enter([]string{name}, opts)
	if err != nil {
		return nil, err
	}
	defer c.end()
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(err, ErrNotObtained)
	}
	ctx, done := c.observe(ctx, name, false)
	l, err := c.acquirePermit(ctx, name, limit, &cfg, false)
	done(l, err)
	return l, err
}

// acquirePermit runs rounds over the permits of name until one is granted;
// without wait, one round.
func (c *Client) acquirePermit(ctx context.Context, name string, limit int, cfg *config, wait bool) (*Lock, error) {
	cfg.limit, cfg.limitKey = limit, Keys(cfg.prefix, name).Lock+":limit"
	permits := make(keysets, limit)
	for i := range permits {
		permits[i] = permitKeys(cfg.prefix, name, i)
	}
	id, ticket := cfg.identity(), ""
	if wait {
		ticket = strconv.FormatInt(cfg.clock.Now().UnixMilli(), 10)
	}
	gone := new(atomic.Bool)
	if !wait {
		l, _, err := c.tryPermits(ctx, name, permits, cfg, id, ticket, gone)
		return l, err
	}
	b := cfg.backoff()
	var wake <-chan struct{}
	var last error = ErrNotObtained
	for {
		if err := ctx.Err(); err != nil {
			return nil, c.giveUp(ctx, cfg, permits, id, errors.Join(err, last), true, gone)
		}
		l, hint, err := c.tryPermits(ctx, name, permits, cfg, id, ticket, gone)
		if err == nil {
			// Out of the other permits' lines: a late refusal that queues
			// us again is undone by its attempt's Late (gone).
			gone.Store(true)
			c.spawn(func() { c.leave(ctx, cfg, permits, id) })
			return l, nil
		}
		if !errors.Is(err, ErrNotObtained) {
			return nil, c.giveUp(ctx, cfg, permits, id, err, true, gone)
		}
		last = err
		if wake == nil {
			var stop func()
			wake, stop = c.bell.listen(permits.channels(), id.owner)
			defer stop()
		}
		delay := b.NextBackOff()
		if hint > 0 && hint < delay {
			delay = hint
		}
		if err := c.sleep(ctx, cfg.clock, delay, wake); err != nil {
			return nil, c.giveUp(ctx, cfg, permits, id, errors.Join(err, last), true, gone)
		}
	}
}

// tryPermits makes one attempt on each permit, from a random one, and
// returns the first Lock granted; else the shortest retry hint and the last
// error, or an error matching ErrInvalid if a node recorded another limit.
func (c *Client) tryPermits(ctx context.Context, name string, permits keysets, cfg *config, id identity, ticket string, gone *atomic.Bool) (*Lock, time.Duration, error) {
	first := rand.IntN(len(permits))
	var hint time.Duration
	var last error
	for k := range permits {
		i := (first + k) % len(permits)
		l, h, err := c.attempt(ctx, []string{name}, permits[i:i+1], cfg, id, ticket, gone)
		if err == nil {
			return l, 0, nil
		}
		if have := recordedLimit(err); have > 0 {
			return nil, 0, invalid("semaphore %s is held with limit %d, not %d", shortKey(name), have, cfg.limit)
		}
		if !errors.Is(err, ErrNotObtained) || ctx.Err() != nil {
			return nil, 0, err
		}
		if h > 0 && (hint == 0 || h < hint) {
			hint = h
		}
		last = err
	}
	return nil, hint, last
}

// checkLimit refuses a semaphore's bad name or limit.
func checkLimit(name string, limit int) error {
	if err := checkKey(name); err != nil {
		return err
	}
	if limit < 1 || limit > MaxLimit {
		return invalid("limit %d must be in [1, %d]", limit, MaxLimit)
	}
	return nil
}

// permitKeys are the names of permit i of the semaphore name: the lock
// <prefix>{name}:permit:i and its siblings, in name's hash tag.
func permitKeys(prefix, name string, i int) keyset {
	lock := Keys(prefix, name).Lock + ":permit:" + strconv.Itoa(i)
	return keyset{Lock: lock, Fence: lock + ":fence", Queue: lock + ":queue", Leases: lock + ":leases", Channel: lock + ":free"}
}

// A limitMismatch is the error of a node's refusal when the semaphore's
// permits there are held under another limit.
type limitMismatch struct{ have int64 }

func (e *limitMismatch) Error() string {
	return fmt.Sprintf("redlock: permits held here with limit %d", e.have)
}

// recordedLimit returns the limit a node reported in err's votes, or 0.
func recordedLimit(err error) int64 {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return 0
	}
	for _, v := range qe.Votes {
		var m *limitMismatch
		if errors.As(v.Err, &m) {
			return m.have
		}
	}
	return 0
}
