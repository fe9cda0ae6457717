package redlock

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
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

	limit int // a semaphore's limit (Acquire); 0 for keys

	gr *guardRound // one attempt's records of the TTLs in use (guard.go)
}

// newAcquisition checks ctx and keys and applies opts over the Client's
// defaults, then counts the call in flight; on success the caller must call
// c.end.
func (c *Client) newAcquisition(ctx context.Context, keys []string, opts []Option, kind holdKind) (*acquisition, error) {
	cfg, err := c.enter(ctx, keys, opts)
	if err != nil {
		return nil, err
	}
	return &acquisition{c: c, cfg: cfg, keys: keys, key: strings.Join(keys, ","),
		kss: newKeysets(cfg.prefix, keys), id: cfg.identity(kind)}, nil
}

// withHold returns a copy of a for one attempt, under a hold of its own:
// undoing one attempt never undoes the next.
func (a *acquisition) withHold() *acquisition {
	at := *a
	at.id.hold = rand.Text()
	at.gr = &guardRound{}
	return &at
}

// on returns a copy of a whose names on the nodes are kss: a semaphore's
// attempt is about the permit each node granted.
func (a *acquisition) on(kss keysets) *acquisition {
	at := *a
	at.kss = kss
	return &at
}

// attempt runs one acquisition round, in line as w says (a zero w for a
// one-shot attempt, which does not queue). On failure it returns the
// holder's shortest remaining lease among the refusals (0 if none) as a
// retry hint.
//
// a.kss has one keyset per key: several for LockMany, whose script takes
// all of them or none on each node, so the whole round is that of one lock.
func (a *acquisition) attempt(ctx context.Context, w *waiting) (*Lock, time.Duration, error) {
	a = a.withHold()
	c, cfg := a.c, &a.cfg
	decided := make(chan struct{})
	var l *Lock
	r := round[[]int64](c, cfg)
	r.Decided = a.gr.decided(nil)
	r.Late = func(n int, v quorum.Vote[[]int64]) {
		<-decided
		switch {
		case l == nil: // the attempt failed; undo skipped n while its call ran
			if v.Outcome != quorum.Refused {
				a.releaseOn(n, undoHold, nil)
			} else if w.gone.Load() {
				// The refusal put the owner back in n's line after Lock gave
				// up: a stale first in line there would refuse everyone.
				a.leaveOn(n)
			}
		case l.answered(n):
			// Unlock skipped n while its call ran: release it now — a late
			// refusal too, since it put the owner in n's waiters' queue, and
			// a stale first in line there would refuse everyone else.
			a.releaseOn(n, l.releaseKind(), l.tokens)
		} // otherwise Unlock, still to come, covers n
	}
	calls := a.calls(w.ticket)
	start := cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]int64] {
		reply, err := a.ask(ctx, n, calls[n])
		return a.vote(n, len(a.kss), reply, err)
	})
	a.resolveGuard(&t)
	until := clock.Validity(start, cfg.ttl, cfg.driftFactor)
	// A lock with less validity left than the loss margin would be declared
	// lost at once: the attempt fails instead.
	usable := until.Add(-cfg.lossMargin())
	nodeFailures(ctx, a, "lock", &t)
	if t.Won() && cfg.clock.Now().Before(usable) {
		if f, ok := a.fence(ctx, &t); ok && cfg.clock.Now().Before(usable) {
			l = a.newLock(ctx, f, until, &t)
		}
	}
	close(decided)
	if l != nil {
		return l, 0, nil
	}
	if t.Count(quorum.Refused) < len(t.Votes) {
		c.spawn(func() { a.undo(ctx, &t) })
	}
	if t.Won() && c.isClosed() { // won, but the Client closed meanwhile
		return nil, 0, ErrClosed
	}
	return nil, retryHint(&t), quorumError(c, "lock", a.key, ErrNotObtained, &t)
}

// ask sends an attempt's call sc to node n and returns the reply. With
// restart detection off, a node is vetted first (ROLE, once): a replica must
// not vote.
func (a *acquisition) ask(ctx context.Context, n int, sc *scriptCall) ([]any, error) {
	if !a.cfg.detectRestarts() {
		if err := a.c.nodes[n].vet(ctx); err != nil {
			return nil, err
		}
	}
	return a.c.exec(ctx, n, sc).Slice()
}

// calls returns each node's acquire.lua call — racquire.lua's for a
// reader: with restart detection on, each carries the node's LASTSAVE as
// this Client last saw it.
func (a *acquisition) calls(ticket string) []*scriptCall {
	s := acquireScript
	if a.id.kind == reader {
		s = racquireScript
	}
	cfg := &a.cfg
	args := commonArgs(0, a.id.owner, a.id.hold, cfg.ttl, cfg.retention, ticket, cfg.queueLease())
	return a.perNode(newScriptCall(s, a.kss.scriptKeys(), args...))
}

// perNode returns an attempt's call base for each node: with restart
// detection on, base's last argument becomes the node's LASTSAVE as this
// Client last saw it, and the start records of the attempt's slot are
// declared.
func (a *acquisition) perNode(base *scriptCall) []*scriptCall {
	calls := make([]*scriptCall, len(a.c.nodes))
	// Under the default guard, while a node is young every node reports the
	// TTL record of the keys ("+"): the young node's grant counts by them.
	record := ""
	if a.cfg.defaultGuard() && a.c.anyYoung(a.cfg.ttl, a.cfg.clock.Now()) {
		record = "+"
	}
	for n, node := range a.c.nodes {
		calls[n] = base
		if a.cfg.detectRestarts() {
			calls[n] = base.withStart(record+node.lastSaved(), node.startKeys(a.kss[0].Lock))
		}
	}
	return calls
}

// vote reads node n's reply to acquire.lua (or a script replying alike),
// whose grants carry per values: a grant's value is the token of each key
// (a semaphore's, the token and the permit); a refusal's, the holder's
// remaining lease.
func (a *acquisition) vote(n, per int, reply []any, err error) quorum.Vote[[]int64] {
	keys := per
	a.c.nodes[n].cause.record(err)
	if err != nil {
		return quorum.Vote[[]int64]{Outcome: quorum.Failed, Err: replicaError(err)}
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
		a.heardRefusal(n, reply)
		return quorum.Vote[[]int64]{Outcome: quorum.Refused, Value: values}
	}
	if err := a.admit(n, startOf(reply, keys)); err != nil {
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
