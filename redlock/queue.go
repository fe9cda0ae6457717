package redlock

import (
	"context"
	"sync/atomic"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// A waiter is a Lock's (or an Acquire's) standing in the waiters' line over
// its attempts: the ticket that orders it on every node, taken at its first
// attempt ("" for a one-shot attempt, which never queues), whether a
// refusal has put it in line, and whether it has given up.
type waiter struct {
	ticket string
	queued bool
	// gone is set once the waiter has given up. A refusal answering after
	// that has put the waiter back in that node's line, so the attempt's
	// late-answer handler (Late) must remove it again, or the stale waiter,
	// first in line, would block everyone.
	gone atomic.Bool
}

// giveUp leaves the waiters' queues, if w had joined them, and returns err.
// It marks w gone first, so that a refusal answering late — after the
// leave — is left by the attempt's Late.
func (a *acquisition) giveUp(ctx context.Context, w *waiter, err error) error {
	w.gone.Store(true)
	if w.queued {
		a.c.spawn(func() { a.leave(ctx) })
	}
	return err
}

// leave removes a's waiter from the keys' waiters' queues on every node,
// announcing the new first in line where a lock is free.
func (a *acquisition) leave(ctx context.Context) {
	r := round[struct{}](a.c, &a.cfg)
	r.Decided = func(*quorum.Tally[struct{}]) bool { return false }
	sc := a.leaveCall()
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[struct{}] {
		if err := a.c.exec(ctx, n, sc).Err(); err != nil {
			return quorum.Vote[struct{}]{Outcome: quorum.Failed, Err: err}
		}
		return quorum.Vote[struct{}]{Outcome: quorum.Granted}
	})
}

// leaveOn removes a's waiter from the keys' waiters' queues on node n
// alone, for a late answer.
func (a *acquisition) leaveOn(n int) {
	a.c.execAlone(context.Background(), n, a.leaveCall())
}

func (a *acquisition) leaveCall() *scriptCall {
	kss := a.kind.line(a.kss)
	args := commonArgs(1+len(kss), a.id.owner, "", 0, 0, "", 0)
	args = append(args, a.kind.leaveMark())
	for _, k := range kss {
		args = append(args, k.Channel)
	}
	return newScriptCall(leaveScript, kss.scriptKeys(4), args...)
}
