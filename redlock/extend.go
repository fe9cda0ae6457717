package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// extendRound extends locks — one, for Extend; a batch, for the watchdog —
// through one round: one extend.lua call per node (per hash slot on a
// cluster node) covers them all, and each lock's votes are tallied on its
// own. It moves each extended lock's Until, ends each lock a majority no
// longer holds, and returns each lock's outcome: nil, an error matching
// ErrLockLost, or a *QuorumError matching neither when too few nodes
// answered. With repair, nodes where a lock is missing and free get it
// again; such a grant counts only from a node known to have been up for the
// lock's restart guard. The caller holds every lock's roundMu.
func (c *Client) extendRound(ctx context.Context, locks []*Lock, repair bool) []error {
	cfg := &locks[0].acq.cfg // the batch's shared node timeout, retention, detection
	r := round[[]quorum.Vote[bool]](c, cfg)
	if repair {
		// The watchdog's rounds carry many locks and are off every caller's
		// path: they wait as long as an answer can still keep a lock.
		r.Timeout = watchdogTimeout(locks)
	}
	r.Decided = func(t *quorum.Tally[[]quorum.Vote[bool]]) bool { return everySettled(t, len(locks)) }
	r.Late = func(n int, v quorum.Vote[[]quorum.Vote[bool]]) { releaseLateRepairs(c, locks, n, v) }
	lw := watchLate(&r, lateExtendFailures(ctx, locks, repair))
	start := c.cfg.clock.Now()
	t := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]quorum.Vote[bool]] {
		votes, err := c.extendOn(ctx, n, locks, repair)
		if err != nil {
			return quorum.Vote[[]quorum.Vote[bool]]{Outcome: quorum.Failed, Err: err}
		}
		return quorum.Vote[[]quorum.Vote[bool]]{Outcome: quorum.Granted, Value: votes}
	})
	lw.decided(&t)
	out := make([]error, len(locks))
	for i, l := range locks {
		lt := lockTally(&t, i)
		octx := ctx
		if repair { // the watchdog's round, on no caller's behalf
			octx = l.observed
		}
		nodeFailures(octx, l.acq, "extend", &lt)
		l.remark(&lt)
		out[i] = l.extended(&lt, clock.Validity(start, l.acq.cfg.ttl, l.acq.cfg.driftFactor))
	}
	return out
}

// extended applies the outcome of l's tally in an extension round whose
// validity would end at until.
func (l *Lock) extended(t *quorum.Tally[bool], until time.Time) error {
	switch {
	case t.Won() && l.acq.cfg.clock.Now().Before(until):
		l.setUntil(until)
		return nil
	case t.Count(quorum.Refused) >= t.Need:
		l.lose(ErrLockLost)
		return quorumError(l.acq.c, "extend", l.acq.key, ErrLockLost, t)
	}
	return quorumError(l.acq.c, "extend", l.acq.key, nil, t)
}

// extendOn runs the extension of locks on node n and returns each lock's
// vote there: Granted (Value true when set by repair), Refused, or Failed
// for a repair that cannot be counted. On a cluster node, each hash slot's
// call goes on its own and at once — those of one shard are batched on its
// route — and a slot whose call fails fails its own locks' votes only; the
// node's error is returned when every call failed.
func (c *Client) extendOn(ctx context.Context, n int, locks []*Lock, repair bool) ([]quorum.Vote[bool], error) {
	nd := c.nodes[n]
	last := ""
	if repair && locks[0].acq.cfg.detectRestarts() {
		last = nd.master.LastSaved()
	}
	groups := nd.groups(locks)
	votes := make([]quorum.Vote[bool], len(locks))
	errs := make([]error, len(groups))
	if len(groups) == 1 {
		errs[0] = c.extendGroup(ctx, n, locks, groups[0], repair, last, votes)
	} else {
		var wg sync.WaitGroup
		for g, group := range groups {
			wg.Go(func() { errs[g] = c.extendGroup(ctx, n, locks, group, repair, last, votes) })
		}
		wg.Wait()
	}
	var first error
	for g, err := range errs {
		if err == nil {
			continue
		}
		first = cmp.Or(first, err)
		for _, i := range groups[g] {
			votes[i] = quorum.Vote[bool]{Outcome: quorum.Failed, Err: err}
		}
	}
	if first != nil && slices.IndexFunc(errs, func(err error) bool { return err == nil }) < 0 {
		return nil, first
	}
	return votes, nil
}

// extendGroup runs the extension of the locks at indexes group, which one
// script call covers on node n, and sets their votes.
func (c *Client) extendGroup(ctx context.Context, n int, locks []*Lock, group []int, repair bool, last string, votes []quorum.Vote[bool]) error {
	nd := c.nodes[n]
	var records []string
	if last != "" {
		records = nd.master.StartKeys(locks[group[0]].acq.kss[0].Lock)
	}
	reply, err := c.exec(ctx, n, extendCall(locks, group, repair, last, records)).Slice()
	if err != nil {
		return err
	}
	results := make([]int64, len(group))
	k := 0 // the reply has one result per key of each lock of group
	for g, i := range group {
		if k+len(locks[i].acq.kss) > len(reply) {
			return fmt.Errorf("redlock: unexpected reply to extend: %v", reply)
		}
		results[g] = lockResult(reply[k : k+len(locks[i].acq.kss)])
		k += len(locks[i].acq.kss)
	}
	var start master.StartInfo
	if rest := reply[k:]; len(rest) > 0 {
		start = master.StartFields(rest)
	}
	// A repair counts by the start of the server that made it: on a
	// cluster, each group's own.
	st, learnErr := nd.master.Learn(start, c.cfg.clock.Now())
	for g, i := range group {
		votes[i] = repairVote(results[g], func() error {
			if learnErr != nil || locks[i].acq.cfg.restartGuard() == 0 {
				return learnErr
			}
			return counted(st, locks[i].acq.cfg.restartGuard(), c.cfg.clock.Now())
		})
	}
	return nil
}

// lockResult is one lock's extend.lua result on a node from its keys'
// results: not ours if any key is not (the node no longer holds the whole
// lock), repaired if any key was, else extended.
func lockResult(keys []any) int64 {
	result := int64(extendDone)
	for _, r := range keys {
		switch r, _ := r.(int64); r {
		case extendNotOurs:
			return extendNotOurs
		case extendRepaired:
			result = extendRepaired
		}
	}
	return result
}

// repairVote is one lock's vote from its extend.lua result; counted says
// whether a repair there may count.
func repairVote(result int64, counted func() error) quorum.Vote[bool] {
	switch result {
	case extendDone:
		return quorum.Vote[bool]{Outcome: quorum.Granted}
	case extendRepaired:
		if err := counted(); err != nil {
			return quorum.Vote[bool]{Outcome: quorum.Failed, Value: true, Err: err}
		}
		return quorum.Vote[bool]{Outcome: quorum.Granted, Value: true}
	}
	return quorum.Vote[bool]{Outcome: quorum.Refused}
}

// groups splits the indexes of locks into those that one script call can
// cover on this node: all of them, or, on a cluster, those of one hash slot.
func (nd *node) groups(locks []*Lock) [][]int {
	all := make([]int, len(locks))
	for i := range all {
		all[i] = i
	}
	if !nd.master.Cluster() || len(locks) == 1 {
		return [][]int{all}
	}
	bySlot := map[int][]int{}
	var slots []int
	for i, l := range locks {
		s := master.SlotOf(l.acq.kss[0].Lock) // a lock's keys share one slot (checkKeys)
		if bySlot[s] == nil {
			slots = append(slots, s)
		}
		bySlot[s] = append(bySlot[s], i)
	}
	out := make([][]int, len(slots))
	for k, s := range slots {
		out[k] = bySlot[s]
	}
	return out
}

// extendCall is extend.lua's call for the locks at indexes group, writers,
// readers and permits alike.
func extendCall(locks []*Lock, group []int, repair bool, last string, start []string) *scriptCall {
	keys := make([]string, 0, 3*len(group))
	mode := "0"
	if repair {
		mode = "1"
	}
	args := commonArgs(1+5*len(group), "", "", 0, locks[0].acq.cfg.retention, "", 0)
	args[argRestart] = last
	args = append(args, mode)
	for _, i := range group {
		l, a := locks[i], locks[i].acq
		mark, record := a.kind.extendArgs(l)
		for k, ks := range a.kss {
			third := ks.Readers
			if record != "" {
				third = record
			}
			keys = append(keys, ks.Lock, ks.Fence, third)
			args = append(args, mark, a.id.owner, a.id.hold, a.cfg.ttl.Milliseconds(), l.tokens[k])
		}
	}
	if last != "" {
		keys = append(keys, start...)
	}
	return newScriptCall(extendScript, keys, args...)
}

// everySettled reports whether the outcome of every lock of an extension
// round is settled: a majority extended it, or can no longer.
func everySettled(t *quorum.Tally[[]quorum.Vote[bool]], locks int) bool {
	for i := range locks {
		if lt := lockTally(t, i); !lt.Settled() {
			return false
		}
	}
	return true
}

// lockTally is lock i's part of an extension round's tally.
func lockTally(t *quorum.Tally[[]quorum.Vote[bool]], i int) quorum.Tally[bool] {
	lt := quorum.Tally[bool]{Votes: make([]quorum.Vote[bool], len(t.Votes)), Need: t.Need}
	for n, v := range t.Votes {
		if v.Outcome == quorum.Granted {
			lt.Votes[n] = v.Value[i]
		} else {
			lt.Votes[n] = quorum.Vote[bool]{Outcome: v.Outcome, Err: v.Err}
		}
	}
	return lt
}

// releaseLateRepairs undoes, on node n, the repairs of an extension that
// answered after its round was decided, for locks that ended meanwhile:
// their release may have come before the repair landed. A lock still held is
// released there by its Unlock, which comes after this answer.
func releaseLateRepairs(c *Client, locks []*Lock, n int, v quorum.Vote[[]quorum.Vote[bool]]) {
	if v.Outcome != quorum.Granted {
		return
	}
	for i, l := range locks {
		if v.Value[i].Value && l.hasEnded() {
			l.acq.releaseOn(l.observed, n, l.releaseKind(), l.tokens)
		}
	}
}
