package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A lateWatch reports the calls of one round that were still running when
// the round was decided — a frozen master's call in a round the others
// won — and then failed: the round's tally has them Pending, so
// nodeFailures never sees them. A round that ran out of time counted its
// calls still running as failed (ErrTimeout), and they were reported with
// its tally: their late answers are not reported again.
type lateWatch[T any] struct {
	ready chan struct{}
	votes []quorum.Vote[T] // the round's tally's, once ready is closed
}

// watchLate makes r's Late, after what it already does, hand report each
// late vote of a call the round was decided without. The caller must call
// decided with the round's tally as soon as Run returns: Late waits for it.
// A nil report (no one to tell) watches nothing, and returns nil.
func watchLate[T any](r *quorum.Round[T], report func(n int, v quorum.Vote[T])) *lateWatch[T] {
	if report == nil {
		return nil
	}
	w := &lateWatch[T]{ready: make(chan struct{})}
	next := r.Late
	r.Late = func(n int, v quorum.Vote[T]) {
		if next != nil {
			next(n, v)
		}
		<-w.ready
		if w.votes[n].Outcome == quorum.Pending {
			report(n, v)
		}
	}
	return w
}

// decided hands w the round's tally t.
func (w *lateWatch[T]) decided(t *quorum.Tally[T]) {
	if w == nil {
		return
	}
	w.votes = t.Votes
	close(w.ready)
}

// errDecidedWithout is the error reported for a call that got no answer
// within the node timeout after its round was decided without it.
var errDecidedWithout = fmt.Errorf("%w (the round was decided without this node)", quorum.ErrTimeout)

// lateError returns the error to report for a late call's failure err: a
// call given up at its deadline, or whose read timed out, is a timeout (quorum.ErrTimeout), whose
// cause explain may know; any other error is its own.
func lateError(err error) error {
	var ne net.Error
	if errors.Is(err, autopipe.ErrAbandoned) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return errDecidedWithout
	}
	return err
}

// reportLate returns a lateWatch report that tells a's observers, as a
// NodeFailed of op, each late vote that failed.
// It is nil when a has no observers: there is no one to tell.
func reportLate[T any](ctx context.Context, a *acquisition, op string) func(int, quorum.Vote[T]) {
	if len(a.cfg.observers) == 0 {
		return nil
	}
	return func(n int, v quorum.Vote[T]) {
		if v.Outcome == quorum.Failed && v.Err != errInFlight {
			a.reportFailure(ctx, op, n, v.Err)
		}
	}
}

// reportFailure tells a's observers that node n's call of op failed with
// err (a late call's error: see lateError) — unless it failed because the
// Client closed, which cuts what is still in flight.
func (a *acquisition) reportFailure(ctx context.Context, op string, n int, err error) {
	os := a.cfg.observers
	if len(os) == 0 || errors.Is(err, autopipe.ErrClosed) || errors.Is(err, redis.ErrClosed) {
		return
	}
	c := a.c
	os.nodeFailed(ctx, op, a.key, NodeVote{Node: n, Addr: c.nodes[n].master.Name(), Outcome: quorum.Failed, Err: c.explain(n, lateError(err))})
}

// lateExtendFailures returns a lateWatch report for an extension round of
// locks (extendRound): a node's late failure is each lock's, and a late
// answer whose slot's call failed is those locks'. The watchdog's rounds
// (repair) report through each Lock's own context, as extendRound does.
func lateExtendFailures(ctx context.Context, locks []*Lock, repair bool) func(int, quorum.Vote[[]quorum.Vote[bool]]) {
	return func(n int, v quorum.Vote[[]quorum.Vote[bool]]) {
		for i, l := range locks {
			err := v.Err
			switch {
			case v.Outcome == quorum.Granted && v.Value[i].Outcome == quorum.Failed:
				err = v.Value[i].Err
			case v.Outcome != quorum.Failed:
				continue
			}
			octx := ctx
			if repair {
				octx = l.observed
			}
			l.acq.reportFailure(octx, "extend", n, err)
		}
	}
}
