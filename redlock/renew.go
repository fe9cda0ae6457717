package redlock

import (
	"container/heap"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
)

// A renewer is a Client's watchdog: it keeps every auto-renewed lock in one
// schedule, ordered by when each is due, behind one timer. When the timer
// fires it takes every lock due now or soon — within a quarter of its period,
// so that locks acquired apart share their renewals — and renews them in
// batches of up to maxBatch: one extend script call per node (per hash slot
// for cluster nodes) covers a whole batch, and each lock's votes are tallied
// on its own, so a lock that cannot be renewed is lost alone.
type renewer struct {
	c *Client

	mu       sync.Mutex
	byDue    renewHeap   // the schedule
	timer    clock.Timer // armed for the earliest due lock; nil before the first
	armed    bool
	armedFor time.Time // the due time the timer is armed for
}

// maxBatch bounds the locks of one batched extension.
const maxBatch = 100

// schedule (re)arms l's renewal d from now. It does nothing for a lock that
// ended: terminate removes a lock, and nothing may put it back.
func (r *renewer) schedule(l *Lock, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Checked under r.mu: terminate marks the lock ended before it takes r.mu
	// to remove it, so either this sees the end or the removal follows.
	if l.hasEnded() {
		return
	}
	l.due = r.c.cfg.clock.Now().Add(d)
	if l.heapIndex >= 0 {
		heap.Fix(&r.byDue, l.heapIndex)
	} else {
		heap.Push(&r.byDue, l)
	}
	r.arm()
}

// remove takes l out of the schedule.
func (r *renewer) remove(l *Lock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.heapIndex >= 0 {
		heap.Remove(&r.byDue, l.heapIndex)
		r.arm()
	}
}

// arm sets the timer for the earliest due lock, or stops it when none is
// scheduled, so that no timer is left once every lock ended. A timer
// already armed for the earliest due time is left as it is: locks come
// and go behind the first without touching it. r.mu held.
func (r *renewer) arm() {
	if len(r.byDue) == 0 {
		if r.armed {
			r.timer.Stop()
			r.armed = false
		}
		return
	}
	first := r.byDue[0].due
	if r.armed && first.Equal(r.armedFor) {
		return
	}
	r.armedFor = first
	d := first.Sub(r.c.cfg.clock.Now())
	if r.timer == nil {
		r.timer = r.c.cfg.clock.AfterFunc(d, r.fire)
	} else {
		r.timer.Reset(d)
	}
	r.armed = true
}

// fire takes the locks due, and renews them in batches, all at once, per
// shard (byShard), so that the rounds of a slow shard do not hold up the
// others'. The rounds' calls to one master go out together through its
// pipe, most urgent first: a bound on the rounds in flight would only make
// the last batches wait for the first ones' answers — on a host short of
// CPU, long enough for their leases to run out.
func (r *renewer) fire() {
	if !r.c.begin() {
		return
	}
	defer r.c.end()
	var wg sync.WaitGroup
	for _, batches := range r.c.byShard(r.take()) {
		for _, batch := range batches {
			wg.Add(1)
			r.c.spawn(func() {
				defer wg.Done()
				r.c.renewBatch(batch)
			})
		}
	}
	wg.Wait()
}

// byShard splits batches by the shards their locks live on: with cluster
// nodes, locks go in one batch only if, on every cluster node, their slots
// have one owner in its slot map — so that one round's calls all go to
// one primary per node, and a shard that is slow or down delays only its
// own locks' renewals. Without cluster nodes it returns batches as they
// are.
func (c *Client) byShard(batches [][]*Lock) [][][]*Lock {
	if !c.hasCluster() {
		return [][][]*Lock{batches}
	}
	shards := map[string][][]*Lock{}
	var order []string
	for _, batch := range batches {
		parts := map[string][]*Lock{}
		var keys []string
		for _, l := range batch {
			k := c.shardOf(l.acq.kss[0].Lock)
			if parts[k] == nil {
				keys = append(keys, k)
			}
			parts[k] = append(parts[k], l)
		}
		for _, k := range keys {
			if shards[k] == nil {
				order = append(order, k)
			}
			shards[k] = append(shards[k], parts[k])
		}
	}
	out := make([][][]*Lock, len(order))
	for i, k := range order {
		out[i] = shards[k]
	}
	return out
}

// shardOf names the primaries owning key's slot on the cluster nodes.
func (c *Client) shardOf(key string) string {
	var b strings.Builder
	for _, nd := range c.nodes {
		if addr, ok := nd.master.ShardAddr(key, c.cfg.nodeTimeout); ok {
			b.WriteString(addr)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// take removes from the schedule every lock due within a quarter of its
// period, and groups them into batches that can share a round.
func (r *renewer) take() [][]*Lock {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = false
	now := r.c.cfg.clock.Now()
	var due []*Lock
	for _, l := range r.byDue {
		if !l.due.After(now.Add(l.acq.cfg.renewEvery() / 4)) {
			due = append(due, l)
		}
	}
	for _, l := range due {
		heap.Remove(&r.byDue, l.heapIndex)
	}
	r.arm()
	byUrgency(due)
	return batches(due)
}

// renewBatch extends locks through one round, with repair: a node that lost
// a lock (restarted empty) or never had it (down at acquisition) gets it
// again where it is free. Locks busy with Extend or Unlock are left to them
// and looked at again shortly.
func (c *Client) renewBatch(locks []*Lock) {
	held := locks[:0:0]
	for _, l := range locks {
		switch {
		case !l.roundMu.TryLock():
			c.renewals.schedule(l, l.acq.cfg.renewRetry())
		case l.Err() != nil:
			l.roundMu.Unlock()
		case !c.cfg.clock.Now().Before(l.Until()):
			l.lose(ErrLockLost)
			l.roundMu.Unlock()
		default:
			held = append(held, l)
		}
	}
	if len(held) == 0 {
		return
	}
	ctx, stop := c.untilClose()
	outcomes := c.extendRound(ctx, held, true)
	stop()
	for i, l := range held {
		err := outcomes[i]
		l.acq.cfg.observers.renewed(l.observed, l.acq.key, err)
		switch {
		case err == nil:
			c.renewals.schedule(l, l.renewIn())
		case errors.Is(err, ErrLockLost), l.Err() != nil:
			// The lock ended; terminate took it out of the schedule.
		default:
			// Too few answers this time; the expiry timer declares the loss
			// if no retry succeeds before the validity runs out.
			c.renewals.schedule(l, l.acq.cfg.renewRetry())
		}
		l.roundMu.Unlock()
	}
}

// renewHeap is a min-heap of locks by due time; each lock knows its index
// in it (Lock.heapIndex, -1 when out of it).
type renewHeap []*Lock

func (h renewHeap) Len() int           { return len(h) }
func (h renewHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h renewHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *renewHeap) Push(x any) {
	l := x.(*Lock)
	l.heapIndex = len(*h)
	*h = append(*h, l)
}
func (h *renewHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	l.heapIndex = -1
	*h = old[:len(old)-1]
	return l
}
