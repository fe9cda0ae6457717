package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// Leader election: a leadership of a name is a hold of the lock of that
// name (a *Lock from Campaign) marked, on a majority of masters, with the
// leader's term and value (lead.lua). Its term is the Lock's fencing token,
// so every later leader of the name has a larger one; it is renewed by the
// watchdog, lost with the lock (Done, Err), and ended by Unlock, which
// resigns. Leader and Observe read the mark back from a majority.

// MaxLeaderValue bounds the size in bytes of the value a leader campaigns
// with; larger ones are refused with ErrInvalid.
const MaxLeaderValue = 64 << 10

// A Leader is who leads a name: the value it campaigned with and its term.
// It is a plain value, safe to copy and compare.
type Leader struct {
	Value string // what the leader campaigned with
	Term  int64  // its Lock's Token(): strictly larger for every later leader of the name
}

// ErrNoLeader is returned by Leader when nobody leads the name now: no
// leader is recorded on a majority of masters with a live lease (the last
// one resigned, its lease ran out, or too few masters answered), or the
// majority's leader is older than one this Client already reported.
var ErrNoLeader = errors.New("redlock: no leader")

// leaderChannel is the channel on which a name's new leaders are announced.
func leaderChannel(kn KeyNames) string { return kn.Lock + ":leader" }

// Campaign waits in line, as Lock does, until the caller leads name, then
// returns its hold: Token() is the term, Done() closes when the leadership
// is lost, Unlock resigns (by hold: a late Unlock never ends a later
// leadership) and hands over at once to the next campaigner in line.
// Auto-renew is on unless opts turn it off. Every Campaign is an owner of
// its own (WithOwner does not apply): two campaigns never share a
// leadership. A name is a lock key: Lock of the same key excludes its
// leaders. Campaign returns only once the leader is recorded on a majority
// (Leader and Observe then see it) — a recording under way is finished
// even if ctx ends meanwhile, and while a majority may carry the mark
// (calls that timed out may have landed) Campaign records again past ctx's
// end until it wins or the hold is lost, so that nobody is reported as
// leader without being told; if the hold is lost first, it resigns and
// campaigns again. On failure it returns what Lock returns: ctx's end or
// the maximum wait joined with ErrNotObtained, ErrClosed, or ErrInvalid
// for bad input (empty or too long name, value over MaxLeaderValue), with
// nothing written.
func (c *Client) Campaign(ctx context.Context, name, value string, opts ...Option) (*Lock, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if len(value) > MaxLeaderValue {
		return nil, invalid("leader value is %d bytes, longer than MaxLeaderValue (%d)", len(value), MaxLeaderValue)
	}
	opts = append([]Option{WithAutoRenew(true)}, opts...)
	for {
		a, err := c.newAcquisition(ctx, []string{name}, opts, writer)
		if err != nil {
			return nil, err
		}
		a.id = identity{owner: rand.Text()}
		l, err := a.waitInLine(ctx)
		if err != nil {
			return nil, err
		}
		err = l.lead(ctx, value)
		if err == nil {
			return l, nil
		}
		// The hold is not recorded as leader on a majority: resign it, so
		// that the next campaigner is not kept waiting, and campaign again.
		_ = l.Unlock(context.WithoutCancel(ctx))
		if ctx.Err() != nil || c.isClosed() {
			return nil, err
		}
	}
}

// lead records l as the leader of its key, with value, on a majority of
// masters, and has each announce it. Its rounds are detached from ctx's
// cancellation: a round that marked a majority must be told, or Leader
// could report a leadership its campaigner never learnt of. A round that
// falls short is tried again while l is held and ctx lasts; lead fails
// once a majority no longer holds l, l is lost, or ctx ends — but not
// while the masters marked so far, with those whose call failed or was
// still running (a mark may have landed there), could make a majority:
// then it goes on past ctx's end until a round wins or l is lost, so that
// a leader Observe may already report is never one whose Campaign failed.
func (l *Lock) lead(ctx context.Context, value string) error {
	c, cfg := l.acq.c, &l.acq.cfg
	if !c.begin() {
		return ErrClosed
	}
	defer c.end()
	kn := l.acq.kss[0]
	args := append(commonArgs(3, l.acq.id.owner, l.acq.id.hold, 0, cfg.retention, "", 0), l.token, value, leaderChannel(kn))
	sc := newScriptCall(leadScript, []string{kn.Lock, kn.Fence}, args...)
	// A renewal that repairs the lock on a node (it restarted empty) writes
	// the mark there again: marks must not decay while the hold does not.
	l.leads.Store(&leadCall{sc})
	b := cfg.backoff()
	var marked []bool // per master: l's mark is or may be there
	for {
		t := l.leadRound(context.WithoutCancel(ctx), sc)
		if t.Won() {
			return nil // lost meanwhile or not, the caller learns it from Done
		}
		err := error(quorumError(c, "campaign", l.acq.key, ErrNotObtained, &t))
		if t.Count(quorum.Refused) >= t.Need {
			return err
		}
		waitCtx := ctx
		if marked = mayBeMarked(marked, &t); countTrue(marked) >= t.Need {
			waitCtx = context.WithoutCancel(ctx)
		}
		if err := c.sleep(waitCtx, cfg.clock, b.NextBackOff(), l.Done()); err != nil {
			return errors.Join(err, ErrNotObtained)
		}
		select {
		case <-l.Done():
			return fmt.Errorf("redlock: campaign for %s: leadership lost as it began: %w", shortKey(l.acq.key), l.Err())
		default:
		}
	}
}

// mayBeMarked updates marked, per master, with lead round t: a master that
// granted holds the mark; one that refused does not hold l, so has none;
// one whose call failed or was still running may have it.
func mayBeMarked(marked []bool, t *quorum.Tally[struct{}]) []bool {
	if marked == nil {
		marked = make([]bool, len(t.Votes))
	}
	for n, v := range t.Votes {
		switch v.Outcome {
		case quorum.Refused:
			marked[n] = false
		default:
			marked[n] = true
		}
	}
	return marked
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// leadRound runs lead.lua call sc on every node.
func (l *Lock) leadRound(ctx context.Context, sc *scriptCall) quorum.Tally[struct{}] {
	c := l.acq.c
	r := round[struct{}](c, &l.acq.cfg)
	return r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[struct{}] {
		led, err := c.exec(ctx, n, sc).Int()
		switch {
		case err != nil:
			return quorum.Vote[struct{}]{Outcome: quorum.Failed, Err: err}
		case led == 1:
			return quorum.Vote[struct{}]{Outcome: quorum.Granted}
		}
		return quorum.Vote[struct{}]{Outcome: quorum.Refused}
	})
}

// A leadCall is a leader's lead.lua call, kept by its Lock.
type leadCall struct{ sc *scriptCall }

// remark writes l's leader mark again, in the background, on each node
// where renewal tally t repaired l; a Lock that is no leader has none.
func (l *Lock) remark(t *quorum.Tally[bool]) {
	lc := l.leads.Load()
	if lc == nil {
		return
	}
	for n, v := range t.Votes {
		if v.Value { // set by repair: counted or not, the hold is there
			l.acq.c.spawn(func() { l.acq.c.execAlone(context.Background(), n, lc.sc) })
		}
	}
}
