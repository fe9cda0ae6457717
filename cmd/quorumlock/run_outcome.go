package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A voteCount sorts the votes of a failed acquisition by what they say about
// the lock and the nodes.
type voteCount struct {
	granted, refused int
	guarded          int      // granted, but not counted: started within the restart guard
	broken           []string // answered with an error: what to fix on each
	pending          int      // not answered when the attempt ended
}

func countVotes(votes []redlock.NodeVote) voteCount {
	var k voteCount
	for _, v := range votes {
		switch {
		case v.Outcome == redlock.Granted:
			k.granted++
		case v.Outcome == redlock.Refused:
			k.refused++
		case v.Outcome == redlock.Pending:
			k.pending++
		case errors.Is(v.Err, redlock.ErrNodeRestarted):
			k.guarded++
		case nodeBroken(v.Err):
			k.broken = append(k.broken, fmt.Sprintf("node %d (%s): %v", v.Node, redactAddr(v.Addr), oneLine(v.Err)))
		}
	}
	return k
}

// nodeBroken reports whether err is a node's answer that no wait will change:
// an error reply (out of memory, read-only, no permission…), a replica, or a
// master that cannot say when it started.
func nodeBroken(err error) bool {
	var re redis.Error
	return errors.As(err, &re) || errors.Is(err, redlock.ErrReplica) || errors.Is(err, redlock.ErrStartUnknown)
}

// notObtained returns run's exit status when the claim was not obtained, and
// why, in one line: held elsewhere (--conflict-exit-code, 75) only when
// enough nodes refused that no majority could grant it; masters within the
// restart guard; nodes answering with errors; or too few nodes answering.
func (c *cli) notObtained(ns *nodeSet, f *runFlags, err error, deadline time.Time) (int, string) {
	switch {
	case errors.Is(err, redlock.ErrInvalid):
		return exitUsage, ns.redact(oneLine(err))
	case !errors.Is(err, redlock.ErrNotObtained):
		return exitInternal, ns.redact(oneLine(err))
	}
	var qe *redlock.QuorumError
	var k voteCount
	if errors.As(err, &qe) {
		k = countVotes(qe.Votes)
	}
	n := len(ns.clients)
	need := quorum.Majority(n)
	why := ns.redact(oneLine(err))
	switch {
	case k.refused > n-need:
		return f.conflict, "held elsewhere: " + why
	case k.guarded > 0 && k.granted+k.guarded >= need:
		return exitRestartGuard, c.guardAdvice(ns, f, deadline)
	case len(k.broken) > 0:
		return exitNodeError, fmt.Sprintf("%d of %d nodes answered with an error; fix them (memory, replica, ACL): %s",
			len(k.broken), n, strings.Join(k.broken, "; "))
	case k.refused > 0 && k.pending == 0:
		return f.conflict, "held elsewhere: " + why
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if ns.reachable(ctx) < need {
		return exitUnavailable, "fewer than a majority of nodes answered: " + why
	}
	return f.conflict, "held elsewhere: " + why
}

// guardAdvice says that masters' grants do not count yet under the restart
// guard, and what to do: vouch for a new deployment, or wait until a
// majority has been up for the guard. It reads the masters' starts and
// the keys' TTL records, and counts as status does (guardSetting.view), so
// that the same state always gives the same guard, count and wait.
func (c *cli) guardAdvice(ns *nodeSet, f *runFlags, deadline time.Time) string {
	// The masters answered a moment ago; a single attempt leaves next to
	// nothing of its budget, and a master that misses it would change
	// the count: the read gets startsBudget at least.
	ctx, cancel := context.WithDeadline(context.Background(), later(deadline, time.Now().Add(startsBudget(f.nodeTimeout))))
	defer cancel()
	starts, longest := ns.starts(ctx, f.claim, f.prefix)
	v, err := f.guardSetting().view(starts, longest)
	if err != nil {
		return "masters within the restart guard: " + oneLine(err)
	}
	n := len(ns.clients)
	young := n - v.Counted - v.Unknown
	unknown := ""
	if v.Unknown > 0 {
		unknown = fmt.Sprintf(" (%d did not say when they started)", v.Unknown)
	}
	wait := "until a majority of them has been up that long"
	if v.Wait > 0 {
		w := v.Wait.Round(time.Second)
		wait = fmt.Sprintf("%v, until a majority has been up that long (or run with --wait %v)", w, w+time.Second)
	}
	return fmt.Sprintf("%d of %d masters started less than the restart guard (%v) ago%s, and their grants do not count yet: "+
		"if they are a new deployment, vouch for them once with 'quorumlock trust --nodes ...'; otherwise wait %s",
		young, n, v.Guard, unknown, wait)
}

// starts reads every master's start, and the longest TTL record over the
// masters of the locks the claim takes (every permit's with --limit), with
// redlock.Inspect: one read per key, all at once, each under ctx. A
// master's start is the one it said reading the first key.
func (ns *nodeSet) starts(ctx context.Context, c claim, prefix string) ([]redlock.MasterStart, time.Duration) {
	found := make([]redlock.Inspection, len(c.keys))
	var wg sync.WaitGroup
	for i, key := range c.keys {
		wg.Go(func() { found[i], _ = redlock.Inspect(ctx, ns.universal(), key, c.limit, redlock.WithPrefix(prefix)) })
	}
	wg.Wait()
	starts := make([]redlock.MasterStart, len(ns.clients))
	var longest time.Duration
	for k, in := range found {
		for i, n := range in.Nodes {
			if k == 0 && n.Err == nil {
				starts[i] = n.Start
			}
			longest = max(longest, n.Record)
		}
	}
	return starts, longest
}

// startsBudget is the least time exit 76 gives the read of the masters'
// starts: the node timeout, at least 100ms.
func startsBudget(nodeTimeout time.Duration) time.Duration {
	return max(nodeTimeout, 100*time.Millisecond)
}

// guardSetting is the restart guard of run's Client.
func (f *runFlags) guardSetting() guardSetting {
	return guardSetting{ttl: f.ttl, guard: f.guard, guardSet: f.guardSet}
}
