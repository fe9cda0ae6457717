package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// MaxLimit bounds the limit of a semaphore (Acquire): each permit is a key
// on the nodes, and every attempt reads all of them.
const MaxLimit = 1024

// Acquire takes one of limit permits of name, waiting until one is free or
// ctx ends; when ctx has no deadline, WithMaxWait bounds the wait. The Lock
// it returns holds that permit (Permit) as Lock holds a key: renewed, lost,
// released and fenced the same way — Token is the permit's fencing token,
// larger than every earlier token of that permit, so a store fenced per
// permit (name and Permit) rejects a stalled holder's late writes.
//
// At most limit holders of name hold a permit at once, over the quorum and
// under node faults (see the package doc). Waiters are served first come,
// first served, one shared line per name: a free permit goes to the oldest
// live waiter, and a release wakes it at once through the name's channel.
// An owner given WithOwner holds at most one permit of a name: a nested
// Acquire of the same owner adds a hold on the permit it already has.
//
// Every holder of name must use the same limit: while a permit is held, an
// Acquire with another limit fails with ErrInvalid, having changed nothing.
// Acquire also refuses, with ErrInvalid and nothing sent, an empty or long
// name and a limit outside [1, MaxLimit].
func (c *Client) Acquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	a, err := c.enterPermit(ctx, name, limit, opts)
	if err != nil {
		return nil, err
	}
	// The line is the name's: its queue and channel are every permit's.
	line := a.on(a.kss[:1])
	return a.waitFor(ctx, func(ctx context.Context) (*Lock, error) {
		return line.waitWith(ctx, []string{line.kss[0].Channel}, a.attempt)
	})
}

// TryAcquire makes one attempt to take one of limit permits of name and
// returns at once, as TryLock does: it does not queue, and while Acquire
// callers wait for name it takes a free permit only if there are more free
// permits than waiters. It refuses the input Acquire refuses.
func (c *Client) TryAcquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	a, err := c.enterPermit(ctx, name, limit, opts)
	if err != nil {
		return nil, err
	}
	return a.tryOnce(ctx, a.attempt)
}

// checkLimit refuses a semaphore's bad limit (its name is checked as a key).
func checkLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return invalid("limit %d must be in [1, %d]", limit, MaxLimit)
	}
	return nil
}

// PermitKeys returns the names the library uses on the nodes for permit i
// of the semaphore name under prefix. Every permit of a name shares its
// waiters' queue, their leases and the channel; the permit's lock and its
// fencing counter are its own: <prefix>{<tag>}:permit:<i> and
// <prefix>{<tag>}:permit:<i>:fence (a permit has no readers: its Readers
// name, :permit:<i>:readers, is never written), beside <prefix>{<tag>}:permits:queue,
// :permits:leases, :permits:free (the channel) and :permits:limit (the
// limit of the current holders; see LimitKey). <tag> is as in Keys, so that
// a semaphore's names share one Cluster hash slot — and never meet the
// names of a Lock of the same key.
func PermitKeys(prefix, name string, i int) KeyNames {
	base := permitBase(prefix, name)
	lock := base + ":permit:" + strconv.Itoa(i)
	shared := base + ":permits"
	return KeyNames{Lock: lock, Fence: lock + ":fence", Queue: shared + ":queue", Leases: shared + ":leases",
		Readers: lock + ":readers", Channel: shared + ":free"}
}

// LimitKey returns the name of the record of the limit that the holders of
// the semaphore name were granted with (a string holding the limit).
func LimitKey(prefix, name string) string { return permitBase(prefix, name) + ":permits:limit" }

func permitBase(prefix, name string) string { return prefix + "{" + hashTag(name) + "}" }

// A permitAcquisition is one Acquire or TryAcquire of a permit of a
// semaphore: an acquisition of the name, whose names on the nodes are every
// permit's, and what its rounds share besides.
type permitAcquisition struct {
	*acquisition     // its limit is the semaphore's
	prefer       int // the permit each round tries first
}

// enterPermit checks a semaphore's input and applies opts, then counts the
// call in flight; on success the caller must call c.end.
func (c *Client) enterPermit(ctx context.Context, name string, limit int, opts []Option) (*permitAcquisition, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	a, err := c.newAcquisition(ctx, []string{name}, opts, writer)
	if err != nil {
		return nil, err
	}
	a.kss = make(keysets, limit)
	for i := range a.kss {
		a.kss[i] = PermitKeys(a.cfg.prefix, name, i)
	}
	a.limit = limit
	return &permitAcquisition{acquisition: a, prefer: rand.IntN(limit)}, nil
}

// votePermit is where a permit.lua grant's vote holds the permit: its
// Value is {token, permit} (a refusal's, {shortest remaining lease}).
const votePermit = 1

// attempt runs one round: each node grants a free permit — the first from
// pa.prefer, so that nodes in one state pick the same — and the permit a
// majority granted is held; grants of other permits are undone. It returns
// the retry hint as acquisition.attempt does.
func (pa *permitAcquisition) attempt(ctx context.Context, w *waiting) (*Lock, time.Duration, error) {
	a := pa.withHold()
	c, cfg := a.c, &a.cfg
	decided := make(chan struct{})
	var l *Lock
	r := round[[]int64](c, cfg)
	r.Decided = a.gr.decided(permitDecided)
	r.Late = func(n int, v quorum.Vote[[]int64]) {
		<-decided
		switch {
		case l == nil:
			if v.Outcome != quorum.Refused {
				grantedOn(a, v).releaseOn(n, undoHold, nil)
			} else if w.gone.Load() {
				a.on(a.kss[:1]).leaveOn(n)
			}
		case l.answered(n):
			grantedOn(a, v).releaseOn(n, l.releaseKind(), nil)
		case v.Outcome == quorum.Granted && int(v.Value[votePermit]) != l.permit:
			grantedOn(a, v).releaseOn(n, undoHold, nil) // another permit than the one held
		} // otherwise Unlock, still to come, covers n
	}
	calls := pa.calls(a, w.ticket)
	start := cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]int64] {
		reply, err := a.ask(ctx, n, calls[n])
		if v, ok := limitVote(reply, err); ok {
			return v
		}
		return a.vote(n, 2, reply, err)
	})
	a.resolveGuard(&t)
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	usable := until.Add(-cfg.lossMargin())
	nodeFailures(ctx, a, "acquire", &t)
	permit, won := winner(&t)
	if won.Won() && cfg.clock.Now().Before(usable) {
		held := a.on(a.kss[permit : permit+1])
		if f, ok := held.fence(ctx, &won); ok && cfg.clock.Now().Before(usable) {
			l = held.newLock(ctx, f, until, &won)
			if l != nil {
				l.permit = permit
			}
		}
	}
	close(decided)
	if l != nil {
		c.spawn(func() { pa.undoOthers(ctx, a, &t, permit) })
		return l, 0, nil
	}
	if next, ok := mostGranted(&t); ok {
		pa.prefer = next // where the next round most likely agrees
	}
	if t.Count(quorum.Refused) < len(t.Votes) {
		c.spawn(func() { pa.undoOthers(ctx, a, &t, -1) })
	}
	if won.Won() && c.isClosed() {
		return nil, 0, ErrClosed
	}
	if recorded, ok := limitRefusal(&t); ok {
		return nil, 0, invalid("semaphore %s is held with limit %d, not %d", shortKey(a.key), recorded, pa.limit)
	}
	return nil, retryHint(&t), quorumError(c, "acquire", a.key, ErrNotObtained, &t)
}

// calls returns each node's permit.lua call for attempt a.
func (pa *permitAcquisition) calls(a *acquisition, ticket string) []*scriptCall {
	cfg := &a.cfg
	keys := make([]string, 0, 2*pa.limit+3)
	for _, p := range a.kss {
		keys = append(keys, p.Lock)
	}
	for _, p := range a.kss {
		keys = append(keys, p.Fence)
	}
	keys = append(keys, a.kss[0].Queue, a.kss[0].Leases, LimitKey(cfg.prefix, a.key))
	args := commonArgs(3, a.id.owner, a.id.hold, cfg.ttl, cfg.retention, ticket, cfg.queueLease())
	args = append(args, pa.limit, pa.prefer, permitBase(cfg.prefix, a.key)+":permit:")
	base := newScriptCall(permitScript, keys, args...)
	return a.perNode(base)
}

// permitDecided ends a round once one permit has a majority of grants, or
// no permit can reach one any more.
func permitDecided(t *quorum.Tally[[]int64]) bool {
	best := 0
	for _, n := range grantsPerPermit(t) {
		best = max(best, n)
	}
	return best >= t.Need || best+t.Count(quorum.Pending) < t.Need
}

func grantsPerPermit(t *quorum.Tally[[]int64]) map[int]int {
	m := map[int]int{}
	for _, v := range t.Votes {
		if v.Outcome == quorum.Granted {
			m[int(v.Value[votePermit])]++
		}
	}
	return m
}

// mostGranted returns the permit with the most grants, if any was granted.
func mostGranted(t *quorum.Tally[[]int64]) (permit int, ok bool) {
	best := 0
	for p, n := range grantsPerPermit(t) {
		if n > best || (n == best && p < permit) {
			permit, best = p, n
		}
	}
	return permit, best > 0
}

// winner returns the permit granted most, and the round's tally as that
// permit's: a grant of another permit counts as a failure there.
func winner(t *quorum.Tally[[]int64]) (int, quorum.Tally[[]int64]) {
	permit, _ := mostGranted(t)
	won := *t
	won.Votes = slices.Clone(t.Votes)
	for n, v := range won.Votes {
		if v.Outcome == quorum.Granted && int(v.Value[votePermit]) != permit {
			won.Votes[n] = quorum.Vote[[]int64]{Outcome: quorum.Failed,
				Err: fmt.Errorf("redlock: granted permit %d, not %d", v.Value[votePermit], permit)}
		}
	}
	return permit, won
}

// undoOthers drops attempt a's hold on every node that answered in time and
// did not refuse, except where it granted keep (-1: everywhere). A node
// still running is undone by Late when it answers.
func (pa *permitAcquisition) undoOthers(ctx context.Context, a *acquisition, t *quorum.Tally[[]int64], keep int) {
	r := round[int64](a.c, &a.cfg)
	r.Decided = func(*quorum.Tally[int64]) bool { return false }
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		v := t.Votes[n]
		if v.Outcome == quorum.Refused || t.Abandoned(n) || (v.Outcome == quorum.Granted && int(v.Value[votePermit]) == keep) {
			return quorum.Vote[int64]{Outcome: quorum.Refused}
		}
		return releaseVote(a.c.exec(ctx, n, grantedOn(a, v).releaseCall(undoHold, nil)).Int64())
	})
}

// grantedOn is attempt a on the permits a node's vote may have left held:
// the one it granted, or — a node that failed may have granted any — all of
// them.
func grantedOn(a *acquisition, v quorum.Vote[[]int64]) *acquisition {
	if v.Outcome == quorum.Granted {
		p := int(v.Value[votePermit])
		return a.on(a.kss[p : p+1])
	}
	return a
}

// errLimit marks a node's refusal because its holders have another limit.
type errLimit struct{ recorded int64 }

func (e errLimit) Error() string {
	return fmt.Sprintf("redlock: held here with limit %d", e.recorded)
}

// limitVote reads permit.lua's {-1, recorded limit}: a refusal, with
// nothing written.
func limitVote(reply []any, err error) (quorum.Vote[[]int64], bool) {
	if err != nil {
		return quorum.Vote[[]int64]{}, false
	}
	if code, ok := replyInt(reply, 0); !ok || code != -1 {
		return quorum.Vote[[]int64]{}, false
	}
	recorded, _ := replyInt(reply, 1)
	return quorum.Vote[[]int64]{Outcome: quorum.Refused, Value: []int64{0}, Err: errLimit{recorded}}, true
}

// limitRefusal reports whether a node refused because of another limit.
func limitRefusal(t *quorum.Tally[[]int64]) (int64, bool) {
	for _, v := range t.Votes {
		var e errLimit
		if errors.As(v.Err, &e) {
			return e.recorded, true
		}
	}
	return 0, false
}
