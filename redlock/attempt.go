package redlock

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// An acquisition is what every step of taking and holding one set of keys
// shares: the Client, the keys and their names on the nodes, the options in
// force, and the identity of the holder — its owner and kind, and in each
// attempt a hold of its own. Its methods are the steps: attempt, fence,
// undo, release, leave. The Lock an attempt wins holds that attempt's
// acquisition.
type acquisition struct {
	c    *Client
	cfg  config
	keys []string // as given to Lock, LockMany or RLock, or a semaphore's name
	key  string   // keys joined by commas: Key, errors, observers
	kss  keysets  // their names on the nodes, in the same order
	id   identity // one owner for every attempt, so that a late grant is ours

	op string // "lock", or "acquire" for a semaphore: errors and observers

	// A semaphore's (Acquire): its limit (0 for keys), the permit its next
	// round tries first, and when its round is decided (nil: won or lost).
	limit  int
	prefer int
	decide func(*quorum.Tally[[]int64]) bool

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
	cfg, err := c.cfg.with(opts)
	if err != nil {
		return nil, err
	}
	if !c.begin() {
		return nil, ErrClosed
	}
	kss, names := c.keys.keysOf(cfg.prefix, keys)
	a := &acquisition{c: c, cfg: cfg, keys: keys, key: joinKeys(keys), kss: kss, id: cfg.identity(kind), op: "lock"}
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
func (a *acquisition) attempt(ctx context.Context, w *place) (*Lock, time.Duration, error) {
	at := a.withHold()
	c, cfg := a.c, &a.cfg
	decided := make(chan struct{})
	var l *Lock
	r := round[[]int64](c, cfg)
	r.Decided = at.gr.decided(a.decide)
	r.Late = func(n int, v quorum.Vote[[]int64]) {
		<-decided
		at.late(ctx, n, v, l, w)
	}
	lw := watchLate(r, reportLate[[]int64](ctx, at, a.op))
	calls, per := at.calls(w.ticket), at.valuesPerVote()
	values := make([]int64, per*len(calls)) // each node's vote's, one allocation
	start := cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]int64] {
		reply, err := at.ask(ctx, n, &calls[n])
		return at.voteInto(values[n*per:n*per:(n+1)*per], n, reply, err)
	})
	lw.decided(&t)
	at.resolveGuard(&t)
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	// A lock with less validity left than the loss margin would be declared
	// lost at once: the attempt fails instead.
	usable := until.Add(-cfg.lossMargin())
	nodeFailures(ctx, at, a.op, &t)
	permit, won, held := -1, t, at // keys: every grant holds them all
	if a.limit > 0 {
		permit, won = a.winner(&t)
		held = at.forKeys(at.kss[permit : permit+1])
	}
	if won.Won() && cfg.clock.Now().Before(usable) {
		if f, ok := held.fence(ctx, &won); ok && cfg.clock.Now().Before(usable) {
			l = held.newLock(ctx, f, until, &won, permit)
		}
	}
	close(decided)
	if l == nil {
		hint, err := at.failed(ctx, &t, won.Won())
		return nil, hint, err
	}
	if permit >= 0 { // a semaphore's grants of other permits
		c.spawn(func() { at.undo(ctx, &t, permit) })
	}
	return l, 0, nil
}

// late handles node n's answer v to attempt a, which came after the round
// was decided; l is the Lock the attempt won, nil if it failed. ctx is the
// attempt's, for the observers of a follow-up's failure.
func (a *acquisition) late(ctx context.Context, n int, v quorum.Vote[[]int64], l *Lock, w *place) {
	on := a.grantedOn(v)
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
		tokens := l.tokens
		if l.permit >= 0 {
			tokens = nil // a permit raises no counter here: on may be every permit
		}
		on.releaseOn(ctx, n, l.releaseKind(), tokens)
	case v.Outcome == quorum.Granted && a.permitOf(v) != l.permit:
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
	if recorded, ok := limitRefusal(t); ok {
		return 0, invalid("semaphore %s is held with limit %d, not %d", shortKey(a.key), recorded, a.limit)
	}
	return retryHint(t), quorumError(c, a.op, a.key, ErrNotObtained, t)
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

// calls returns each node's acquire.lua call — racquire.lua's for a
// reader, permit.lua's for a semaphore: with restart detection on, each
// carries the node's LASTSAVE as this Client last saw it.
func (a *acquisition) calls(ticket string) []scriptCall {
	if a.limit > 0 {
		return a.permitCalls(ticket)
	}
	s := acquireScript
	if a.id.kind == reader {
		s = racquireScript
	}
	pre := a.holderArgs(true, ticket)
	return a.perNode(a.newCall(s, 5, &pre, 0))
}

// vote reads node n's reply to a's call: a grant's value is the token of
// each key, then 1 if every one came from the node's clock, else 0 (a
// semaphore's, the token and the permit); a refusal's, the holder's
// remaining lease.
func (a *acquisition) vote(n int, reply []any, err error) quorum.Vote[[]int64] {
	return a.voteInto(nil, n, reply, err)
}

// valuesPerVote is the room a vote of a's needs: a token per key and the
// clock flag, or a semaphore's token and permit (and a spare).
func (a *acquisition) valuesPerVote() int {
	if a.limit > 0 {
		return 3
	}
	return len(a.kss) + 1
}

// voteInto is vote, its value written into into when it has room.
func (a *acquisition) voteInto(into []int64, n int, reply []any, err error) quorum.Vote[[]int64] {
	keys := len(a.kss)
	if a.limit > 0 {
		if v, ok := limitVote(reply, err); ok {
			return v
		}
		keys = 2
	}
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
	if a.limit == 0 { // after the tokens, whether they came from the clock
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
