package redlock

import (
	"context"
	"errors"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// A releaseKind says what release.lua is asked to do.
type releaseKind int

const (
	unlockLock releaseKind = iota // Unlock: delete the lock, announce it to the waiters
	unlockHold                    // Unlock of a reentrant hold: drop it; announce if that frees the lock
	undoHold                      // a failed attempt: drop its hold, silently — its own waiter would wake
)

// release undoes l's holding of every key on every node, in parallel, one
// call per node, each under the node timeout, detached from ctx's
// cancellation. Its tokens are raised onto the counters of every answering
// node not known to be fenced (those already hold counters at least as
// large). Nodes whose acquire call is still in flight are left out: that
// call's Late releases them.
func (l *Lock) release(ctx context.Context) quorum.Tally[int64] {
	a := l.acq
	r := round[int64](a.c, &a.cfg)
	r.Decided = func(t *quorum.Tally[int64]) bool { return t.Won() || t.Count(quorum.Refused) >= t.Need }
	kind, skip := l.releaseKind(), l.stillInFlight()
	raise := a.releaseCall(kind, l.tokens)
	plain := raise
	if l.fenced != nil {
		plain = a.releaseCall(kind, nil)
	}
	lw := watchLate(&r, reportLate[int64](ctx, a, "unlock"))
	t := r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		if skip.has(n) {
			return quorum.Vote[int64]{Outcome: quorum.Failed, Err: errInFlight}
		}
		sc := raise
		if l.fenced != nil && l.fenced[n] {
			sc = plain
		}
		return releaseVote(a.c.exec(ctx, n, sc).Int64())
	})
	lw.decided(&t)
	return t
}

// undo drops attempt a's hold on every node that did not refuse it, failed
// ones included, except a semaphore's grants of permit keep (-1: none). A
// node still running is undone by Late when it answers, never before. Its
// failed calls are reported to a's observers as its kind's op.
func (a *acquisition) undo(ctx context.Context, t *quorum.Tally[[]int64], keep int) {
	r := round[int64](a.c, &a.cfg)
	r.Decided = func(*quorum.Tally[int64]) bool { return false }
	u := r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		v := t.Votes[n]
		kept := keep >= 0 && v.Outcome == quorum.Granted && a.kind.permitOf(v) == keep
		if v.Outcome == quorum.Refused || t.Abandoned(n) || kept {
			return quorum.Vote[int64]{Outcome: quorum.Refused}
		}
		return releaseVote(a.c.exec(ctx, n, a.kind.grantedOn(a, v).releaseCall(undoHold, nil)).Int64())
	})
	nodeFailures(ctx, a, a.kind.op(), &u)
}

// errInFlight is the vote, in an Unlock, of a node whose acquire call had
// not answered yet: it is released when that call returns.
var errInFlight = errors.New("redlock: acquire still in flight on this node; released when it answers")

// releaseOn runs release.lua on node n alone, for a late answer, and
// reports its failure to a's observers, through ctx (its cancellation
// dropped): as an Unlock's, or for an undo as its kind's op.
func (a *acquisition) releaseOn(ctx context.Context, n int, kind releaseKind, tokens []int64) {
	ctx = context.WithoutCancel(ctx)
	err := a.c.execAlone(ctx, n, a.releaseCall(kind, tokens))
	if err != nil {
		op := "unlock"
		if kind == undoHold {
			op = a.kind.op()
		}
		a.reportFailure(ctx, op, n, err)
	}
}

// releaseCall is release.lua's call for kind — rrelease.lua's for a reader;
// tokens are the counters to raise, one per key, or nil to raise none.
func (a *acquisition) releaseCall(kind releaseKind, tokens []int64) *scriptCall {
	return a.kind.releaseCall(a, kind, tokens)
}

// wreleaseCall is release.lua's call for a writer's holding of its keys, or
// a semaphore's of its permit.
func (a *acquisition) wreleaseCall(kind releaseKind, tokens []int64) *scriptCall {
	kss := a.kss
	var mode, announce any = "0", "" // boxed as constants: no allocation
	switch kind {
	case unlockLock:
		mode, announce = "1", "1"
	case unlockHold:
		announce = "1"
	}
	pre := a.holderArgs(false, "")
	sc := a.newCall(releaseScript, 4, &pre, 2+2*len(kss))
	args := append(sc.evalsha, mode, announce)
	for i := range kss {
		var token int64
		if tokens != nil {
			token = tokens[i]
		}
		args = append(args, token)
	}
	for i := range kss {
		args = append(args, a.channelArg(i))
	}
	sc.evalsha = args
	return sc
}

// rreleaseCall is rrelease.lua's call for a reader's holding of its key: an
// Unlock — of a reentrant owner's hold or not, since each reader is a hold
// of its own — or an undo.
func (a *acquisition) rreleaseCall(kind releaseKind, tokens []int64) *scriptCall {
	ks := a.kss[0]
	unlock := ""
	if kind != undoHold {
		unlock = "1"
	}
	var token int64
	if tokens != nil {
		token = tokens[0]
	}
	pre := a.holderArgs(false, "")
	sc := a.newCall(rreleaseScript, 5, &pre, 3)
	sc.evalsha = append(sc.evalsha, unlock, token, ks.Channel)
	return sc
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
