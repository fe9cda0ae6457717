package redlock

import (
	"context"
	"math"
	"slices"
	"time"
)

// What goes into the watchdog's rounds, in which order, and how long each
// waits (renew.go runs them).

// batches groups locks by what their round shares — node timeout,
// retention, restart detection — in groups of at most maxBatch.
func batches(locks []*Lock) [][]*Lock {
	type shape struct {
		timeout, retention time.Duration
		detect             bool
	}
	groups := map[shape][]*Lock{}
	var order []shape
	for _, l := range locks {
		k := shape{l.acq.cfg.nodeTimeout, l.acq.cfg.retention, l.acq.cfg.detectRestarts()}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], l)
	}
	var out [][]*Lock
	for _, k := range order {
		for g := groups[k]; len(g) > 0; g = g[min(len(g), maxBatch):] {
			out = append(out, g[:min(len(g), maxBatch)])
		}
	}
	return out
}

// byUrgency orders locks by the time each has left before its loss must be
// declared, least first: the first batches formed, and sent, are those of
// the locks that can least afford to wait for the others — a lock whose
// renewal failed, or one taken late by a process short of CPU, goes before
// one renewed on time.
func byUrgency(locks []*Lock) {
	type entry struct {
		l     *Lock
		until time.Time
	}
	es := make([]entry, len(locks))
	for i, l := range locks {
		es[i] = entry{l, l.Until()}
	}
	slices.SortStableFunc(es, func(a, b entry) int { return a.until.Compare(b.until) })
	for i, e := range es {
		locks[i] = e.l
	}
}

// watchdogTimeout bounds each node's call in a watchdog round for locks:
// the time its most urgent lock has left before its loss must be declared,
// less one retry (renewRetry, then renewTimeout) — and at least
// renewTimeout. So a batch is not given up because the process, or a
// master, was descheduled for a moment: on a host short of CPU, failing it
// would only send the same work again, and fail it again. The retry left
// is for a request that will never be answered (its packets were lost, its
// connection is dead): that one needs another call. Waiting longer costs
// validity, never safety: validity is counted from the round's start, and
// each lock's expiry timer declares its loss on time whatever the round
// is waiting for.
func watchdogTimeout(locks []*Lock) time.Duration {
	wait := time.Duration(math.MaxInt64)
	for _, l := range locks {
		l.mu.Lock()
		wait = min(wait, l.untilLoss()-l.acq.cfg.renewRetry()-l.acq.cfg.renewTimeout())
		l.mu.Unlock()
	}
	return max(locks[0].acq.cfg.renewTimeout(), wait) // the batch shares its node timeout
}

// untilClose returns a context that ends when the Client closes: a
// watchdog round may wait long for slow answers, but not past Close. stop
// ends the watch once the round has returned, and leaves the context be:
// the calls the round did not wait for still run to their own deadline,
// so that a node slow to answer still extends the leases it holds.
func (c *Client) untilClose() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-returned:
		}
	}()
	return ctx, func() { close(returned) }
}
