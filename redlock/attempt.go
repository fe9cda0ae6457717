package redlock

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// An acquisition is what every step of taking and holding one set of keys
// shares: the Client, the keys and their names on the nodes, the options in
// force, the kind of holding, and the identity of the holder — its owner,
// and in each attempt a hold of its own. Its methods are the steps:
// attempt, fence, undo, release, leave. The Lock an attempt wins holds that
// attempt's acquisition.
type acquisition struct {
	c    *Client
	cfg  config
	keys []string  // as given to Lock, LockMany or RLock, or a semaphore's name
	key1 [1]string // keys' array when there is one: no allocation of its own
	key  string    // keys joined by commas: Key, errors, observers
	kss  keysets   // their names on the nodes, in the same order
	kind holdKind  // writer, reader, or a semaphore's permitKind
	id   identity  // one owner for every attempt, so that a late grant is ours

	prefer int // a semaphore's: the permit its next round tries first

	gr *guardRound // one attempt's records of the TTLs in use (guard.go)

	box      *boxes // values every call repeats, boxed once (callargs.go)
	holdText string // the hold holdArg boxes (callargs.go)
	holdArg  any
}

// newAcquisition checks ctx and keys, applies opts over the Client's
// defaults and counts the call in flight; on success the caller must call
// c.end. Once two members were found to be one cluster, it refuses every
// acquisition with ErrSameCluster's error.
func (c *Client) newAcquisition(ctx context.Context, keys []string, opts []Option, kind holdKind) (*acquisition, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if err := c.checkKeys(keys); err != nil {
		return nil, err
	}
	if err := c.ids.SameCluster(); err != nil {
		return nil, err
	}
	cfg := c.cfg // checked by New: without options, nothing to check again
	if len(opts) > 0 {
		var err error
		if cfg, err = c.cfg.with(opts); err != nil {
			return nil, err
		}
	}
	if !c.begin() {
		return nil, ErrClosed
	}
	kss, names := c.keys.keysOf(cfg.prefix, keys)
	a := &acquisition{c: c, cfg: cfg, key: joinKeys(keys), kss: kss, kind: kind, id: cfg.identity()}
	// keys copied, so that the caller's slice (TryLock's one key) need not
	// escape
	if len(keys) == 1 {
		a.key1[0] = keys[0]
		a.keys = a.key1[:]
	} else {
		a.keys = slices.Clone(keys)
	}
	a.box = newBoxes(c, &a.cfg, kss, names, a.id.owner)
	return a, nil
}

// joinKeys is keys joined by commas, without an allocation for one key.
func joinKeys(keys []string) string {
	if len(keys) == 1 {
		return keys[0]
	}
	return strings.Join(keys, ",")
}

// withHold returns a copy of a for one attempt, under a hold of its own:
// undoing one attempt never undoes the next.
func (a *acquisition) withHold() *acquisition {
	both := &struct { // one allocation for the two
		at acquisition
		gr guardRound
	}{at: *a}
	at := &both.at
	at.id.hold = rand.Text()
	at.holdText, at.holdArg = at.id.hold, at.id.hold
	at.gr = &both.gr
	return at
}

// forKeys returns a copy of a for the keys kss: a semaphore's attempt, once
// decided, acts on the permit the nodes granted.
func (a *acquisition) forKeys(kss keysets) *acquisition {
	at := *a
	at.kss = kss
	return &at
}

// attempt runs one round for a's keys, or one permit of a semaphore, in line
// as w says (a zero w: one-shot, not queued). On failure it also returns the
// shortest remaining lease among the refusals (0 if none) as a retry hint.
func (a *acquisition) attempt(ctx context.Context, w *waiter) (*Lock, time.Duration, error) {
	at := a.withHold()
	c, cfg := a.c, &a.cfg
	decided := make(chan struct{})
	// What the attempt's calls and Late share with it, in one allocation:
	// the Lock it wins (nil if none), the round's tally, and the tally of
	// what the Lock holds.
	out := &struct {
		l      *Lock
		t, won quorum.Tally[[]int64]
	}{}
	r := round[[]int64](c, cfg)
	r.Decided = at.gr.decided(a.kind.decided())
	r.Late = func(n int, v quorum.Vote[[]int64]) {
		<-decided
		at.late(ctx, n, v, out.l, w)
	}
	lw := watchLate(&r, reportLate[[]int64](ctx, at, a.kind.op()))
	calls, per := at.calls(w.ticket), a.kind.valuesPerVote(at)
	values := make([]int64, per*len(calls)) // each node's vote's, one allocation
	start := cfg.clock.Now()
	out.t = r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]int64] {
		reply, err := at.ask(ctx, n, &calls[n])
		return a.kind.vote(at, values[n*per:n*per:(n+1)*per], n, reply, err)
	})
	t := &out.t
	lw.decided(t)
	at.resolveGuard(t)
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	// A lock with less validity left than the loss margin would be declared
	// lost at once: the attempt fails instead.
	usable := until.Add(-cfg.lossMargin())
	nodeFailures(ctx, at, a.kind.op(), t)
	held, permit, won := a.kind.won(a, at, t)
	out.won = won
	if won.Won() && cfg.clock.Now().Before(usable) {
		if f, ok := held.fence(ctx, &out.won); ok && cfg.clock.Now().Before(usable) {
			out.l = held.newLock(ctx, f, until, &out.won, permit)
		}
	}
	close(decided)
	if out.l == nil {
		hint, err := at.failed(ctx, t, won.Won())
		return nil, hint, err
	}
	a.kind.undoOthers(ctx, at, t, permit)
	return out.l, 0, nil
}

// late handles node n's answer v to attempt a, which came after the round
// was decided; l is the Lock the attempt won, nil if it failed. ctx is the
// attempt's, for the observers of a follow-up's failure.
func (a *acquisition) late(ctx context.Context, n int, v quorum.Vote[[]int64], l *Lock, w *waiter) {
	on := a.kind.grantedOn(a, v)
	switch {
	case l == nil: // the attempt failed; undo skipped n while its call ran
		if v.Outcome != quorum.Refused {
			on.releaseOn(ctx, n, undoHold, nil)
		} else if w.gone.Load() {
			// The refusal put the owner back in n's line after Lock gave
			// up: a stale first in line there would refuse everyone.
			a.leaveOn(n)
		}
	case l.answered(n):
		// Unlock skipped n while its call ran: release it now — a late
		// refusal too, since it put the owner in n's waiters' queue, and
		// a stale first in line there would refuse everyone else.
		on.releaseOn(ctx, n, l.releaseKind(), a.kind.lateTokens(l))
	case v.Outcome == quorum.Granted && a.kind.permitOf(v) != l.permit:
		on.releaseOn(ctx, n, undoHold, nil) // a semaphore's other permit
	} // otherwise Unlock, still to come, covers n
}

// failed ends attempt a, which won no Lock, with tally t: it undoes a's
// grants in the background and returns the retry hint and the error; won
// says the round was won all the same.
func (a *acquisition) failed(ctx context.Context, t *quorum.Tally[[]int64], won bool) (time.Duration, error) {
	c := a.c
	if t.Count(quorum.Refused) < len(t.Votes) {
		c.spawn(func() { a.undo(ctx, t, -1) })
	}
	if won && c.isClosed() { // won, but the Client closed meanwhile
		return 0, ErrClosed
	}
	if e, ok := limitRefusal(t); ok {
		return 0, invalid("semaphore %s is held with limit %d, not %d", shortKey(a.key), e.recorded, e.asked)
	}
	return retryHint(t), quorumError(c, a.kind.op(), a.key, ErrNotObtained, t)
}

// ask sends an attempt's call sc to node n and returns the reply. With
// restart detection off, a node is vetted first (ROLE, once): a replica must
// not vote.
func (a *acquisition) ask(ctx context.Context, n int, sc *scriptCall) ([]any, error) {
	if !a.cfg.detectRestarts() {
		if err := a.c.nodes[n].master.Vet(ctx); err != nil {
			return nil, err
		}
	}
	return a.c.exec(ctx, n, sc).Slice()
}

// calls returns each node's call of a's attempt — acquire.lua's,
// racquire.lua's for a reader, permit.lua's for a semaphore: with restart
// detection on, each carries the node's LASTSAVE as this Client last saw it.
func (a *acquisition) calls(ticket string) []scriptCall { return a.kind.calls(a, ticket) }

// vote reads node n's reply to a's call, as a's kind reads it.
func (a *acquisition) vote(n int, reply []any, err error) quorum.Vote[[]int64] {
	return a.kind.vote(a, nil, n, reply, err)
}

// readVote reads node n's reply to a's call, whose grant carries keys
// values after its code (the tokens of the keys; a permit's token and
// permit), then, with clockFlag, whether every token came from the node's
// clock (1, else 0); a refusal's value is the holder's remaining lease.
// The value is written into into when it has room.
func (a *acquisition) readVote(into []int64, n int, reply []any, err error, keys int, clockFlag bool) quorum.Vote[[]int64] {
	a.c.nodes[n].cause.record(err)
	if err != nil {
		return quorum.Vote[[]int64]{Outcome: quorum.Failed, Err: replicaError(err)}
	}
	granted, ok1 := replyInt(reply, 0)
	first, ok := replyInt(reply, 1)
	ok = ok && ok1
	if cap(into) < keys+1 {
		into = make([]int64, 0, keys+1)
	}
	values := append(into[:0], first)
	for i := 1; ok && granted >= grantedCounter && i < keys; i++ {
		var v int64
		v, ok = replyInt(reply, 1+i)
		values = append(values, v)
	}
	if !ok {
		return quorum.Vote[[]int64]{Outcome: quorum.Failed, Err: fmt.Errorf("redlock: unexpected reply to acquire: %v", reply)}
	}
	if granted < grantedCounter {
		a.heardRefusal(n, reply)
		return quorum.Vote[[]int64]{Outcome: quorum.Refused, Value: values}
	}
	if clockFlag { // after the tokens, whether they came from the clock
		values = append(values, granted-grantedCounter)
	}
	if err := a.admit(n, master.StartOf(reply, keys)); err != nil {
		// Not counted (or, a *youngGrant, not yet); like any failure,
		// undone if the attempt fails.
		return quorum.Vote[[]int64]{Outcome: quorum.Failed, Value: values, Err: err}
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
