package redlock

import (
	"context"
	"time"
)

// ObserveRecheck bounds how long Observe goes without reading the masters
// when no announcement comes: the fallback that recovers an announcement it
// missed (a master down or its subscription not active yet). While a
// leader's lease lasts less, Observe reads again when it may have ended.
const ObserveRecheck = 5 * time.Second

// Observe sends on the returned channel the current leader of name, if any,
// then each new leader of name in increasing term order, until ctx ends or
// the Client is closed; then the channel is closed. It sends leaders only
// (never "nobody leads": ask Leader), never a term older than or equal to one
// it already sent, and never one older than this Client already reported.
// It learns of new leaders from their announcement on every master (one
// subscription per master, shared with the Client's waiters), reading the
// majority at each (as Leader does), and reads again at least every
// ObserveRecheck, so that a missed announcement only delays a change. A
// leader that came and went between two reads may be skipped. The channel
// is unbuffered: a slow receiver delays the reads, never loses the latest
// leader. Bad input (a nil ctx, an empty or too long name) is refused with
// ErrInvalid; after Close it returns ErrClosed.
func (c *Client) Observe(ctx context.Context, name string) (<-chan Leader, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if err := checkKey(name); err != nil {
		return nil, err
	}
	if !c.begin() {
		return nil, ErrClosed
	}
	out := make(chan Leader)
	wake, stop := c.wakeups.register([]string{leaderChannel(Keys(c.cfg.prefix, name))}, "")
	c.spawn(func() {
		defer c.end()
		defer close(out)
		defer stop()
		c.watch(ctx, name, out, wake)
	})
	return out, nil
}

// watch is Observe's loop: read, send a newer leader, wait for a wake-up or
// the recheck, until ctx ends or Close.
func (c *Client) watch(ctx context.Context, name string, out chan<- Leader, wake <-chan struct{}) {
	var sent int64
	// The subscriptions become active a subscribe timeout at most after
	// listen: an announcement before may be missed, so the first recheck
	// comes then.
	next := c.wakeups.subscribeTimeout()
	for ctx.Err() == nil && !c.isClosed() {
		ld, left, err := c.readLeader(ctx, name)
		if err == nil && ld.Term > sent {
			select {
			case out <- ld:
				sent = ld.Term
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		}
		wait := ObserveRecheck
		if err == nil {
			wait = min(wait, left)
		}
		if next > 0 {
			wait, next = min(wait, next), 0
		}
		if err := c.sleep(ctx, c.cfg.clock, max(wait, c.cfg.nodeTimeout), wake); err != nil {
			return
		}
	}
}
