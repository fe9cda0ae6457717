package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
	"golang.org/x/sync/errgroup"
)

// queryOnce asks every node in parallel, each in one round trip under
// --timeout, waits for all (errgroup), and tallies. A node's failure is
// its row of the table, so it stops none of the others.
func queryOnce(ctx context.Context, ns *nodeSet, f *statusFlags) *lockStatus {
	names := redlock.Keys(f.prefix, f.key)
	n := len(ns.clients)
	st := &lockStatus{Key: f.key, LockKey: names.Lock, FenceKey: names.Fence, ReadersKey: names.Readers,
		Nodes: make([]nodeStatus, n), Need: quorum.Majority(n), limitKey: redlock.LimitKey(f.prefix, f.key)}
	if f.limit > 0 {
		st.Semaphore = newSemaphore(f.prefix, f.key, f.limit, n)
	}
	var g errgroup.Group
	for i, rdb := range ns.clients {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(ctx, f.timeout)
			defer cancel()
			addr := redactAddr(ns.addrs[i])
			if !st.queryNode(ctx, rdb, i, redlock.TrustKey) {
				addr += st.queryOwner(ctx, rdb, i) // a cluster node (cluster.go)
			}
			st.setAddr(i, addr)
			return nil
		})
	}
	_ = g.Wait() // nothing to report: each node's error is in st
	st.tally()
	st.tallyGuard(f.guardSetting)
	return st
}

// queryNode reads node i's view of the key, and of its semaphore, in one
// pipeline, with the vouch recorded under trust. On a node in cluster mode
// whose vouch was read from TrustKey, it records nothing and returns false:
// the key lives on its slot's primary, which queryOwner asks.
func (st *lockStatus) queryNode(ctx context.Context, rdb *redis.Client, i int, trust string) bool {
	pipe := rdb.Pipeline()
	writer := queueHolder(ctx, pipe, st.LockKey, st.FenceKey)
	now := pipe.Time(ctx)
	readers := pipe.ZRangeWithScores(ctx, st.ReadersKey, 0, -1)
	var permits func()
	var limit *redis.StringCmd
	if st.Semaphore != nil {
		permits = st.Semaphore.queue(ctx, pipe, i)
	} else {
		limit = pipe.Get(ctx, st.limitKey) // a semaphore of the name (detectLimit)
	}
	record := queueRecords(ctx, pipe, st.locks())
	info := pipe.InfoMap(ctx, "server")
	trusted := pipe.Get(ctx, trust)
	cmds, err := pipe.Exec(ctx)
	if trust == redlock.TrustKey && info.Val()["Server"]["redis_mode"] == "cluster" {
		return false
	}
	// The start's commands last: a user without INFO still gets the rest.
	if err == nil || errors.Is(err, redis.Nil) || err == info.Err() || err == trusted.Err() {
		err = firstError(cmds[:len(cmds)-2])
	}
	if err != nil {
		st.failed(i, err)
		return true
	}
	st.setStart(i, startFromInfo(info, trusted), record())
	st.Nodes[i].holderStatus = writer.status()
	st.Nodes[i].readers = liveReaders(readers.Val(), now.Val())
	st.Nodes[i].Readers = len(st.Nodes[i].readers)
	if permits != nil {
		permits()
	}
	if limit != nil {
		st.Nodes[i].limit, _ = limit.Int()
	}
	return true
}

// locks are the names of the locks whose TTL records status reads: the
// key's, and with --limit every permit's (as run would take them).
func (st *lockStatus) locks() []string {
	locks := []string{st.LockKey}
	if st.Semaphore != nil {
		for _, p := range st.Semaphore.Permits {
			locks = append(locks, p.LockKey)
		}
	}
	return locks
}

// firstError returns the first error of cmds but redis.Nil, an absent
// key's answer: Exec reports only the first error, and a redis.Nil may hide
// a later one.
func firstError(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// failed records that node i did not answer.
func (st *lockStatus) failed(i int, err error) {
	st.Nodes[i].holderStatus = holderStatus{Error: err.Error()}
	if st.Semaphore != nil {
		st.Semaphore.failed(i, err)
	}
}

// setAddr names node i in every view of it.
func (st *lockStatus) setAddr(i int, addr string) {
	st.Nodes[i].Addr = addr
	if st.Semaphore != nil {
		st.Semaphore.setAddr(i, addr)
	}
}

// A holderQuery is one lock's commands in a node's pipeline.
type holderQuery struct {
	owner *redis.StringCmd
	pttl  *redis.Cmd
	hlen  *redis.IntCmd
	ttl   *redis.BoolCmd // the lock records its TTL (a field, not a hold)
	fence *redis.StringCmd
}

func queueHolder(ctx context.Context, pipe redis.Pipeliner, lockKey, fenceKey string) holderQuery {
	return holderQuery{
		owner: pipe.HGet(ctx, lockKey, "owner"),
		pttl:  pipe.Do(ctx, "PTTL", lockKey),
		hlen:  pipe.HLen(ctx, lockKey),
		ttl:   pipe.HExists(ctx, lockKey, "ttl"),
		fence: pipe.Get(ctx, fenceKey),
	}
}

// status reads the answers, once the pipeline ran without error.
func (q holderQuery) status() holderStatus {
	hs := holderStatus{Reachable: true, Owner: q.owner.Val()}
	hs.Fence, _ = q.fence.Int64() // absent: 0
	if hs.Owner != "" {
		hs.TTLMillis, _ = q.pttl.Int64()
		hs.Holds = q.hlen.Val() - 1 // every field but "owner" (and "ttl")
		if q.ttl.Val() {
			hs.Holds--
		}
	}
	return hs
}

// liveReaders returns the members whose lease ends after now, the node's
// time.
func liveReaders(members []redis.Z, now time.Time) []string {
	var live []string
	for _, z := range members {
		if z.Score > float64(now.UnixMilli()) {
			live = append(live, fmt.Sprint(z.Member))
		}
	}
	return live
}

// tally counts the reachable nodes, the writer held on most of them, the
// readers held on a majority, and the semaphore's permits.
func (st *lockStatus) tally() {
	owners := make([]string, len(st.Nodes))
	readers := map[string]int{}
	for i, n := range st.Nodes {
		if n.Reachable {
			st.Reachable++
		}
		owners[i] = n.Owner
		for _, r := range n.readers {
			readers[r]++
		}
	}
	st.agreement = agree(owners, st.Need, st.Reachable)
	st.Readers = count{known: st.Reachable >= st.Need}
	for _, k := range readers {
		if k >= st.Need {
			st.Readers.n++
		}
	}
	if st.Readers.n > 0 {
		st.Readers.known = true // a majority has them, whatever the others say
		if st.Held != yes {
			st.State = stateShared
		}
	}
	if st.Semaphore != nil {
		st.Semaphore.tally(st.Need, st.Reachable)
	}
}

// agree returns the owner most of owners name ("" is free), ties going to
// the smallest, and whether need of them name it — unknown when fewer than
// need of the nodes answered (reachable) and fewer than need hold it.
func agree(owners []string, need, reachable int) agreement {
	counts := map[string]int{}
	for _, o := range owners {
		if o != "" {
			counts[o]++
		}
	}
	var a agreement
	for owner, k := range counts {
		if k > a.Holders || (k == a.Holders && owner < a.Owner) {
			a.Owner, a.Holders = owner, k
		}
	}
	switch {
	case a.Holders >= need:
		a.Held, a.State = yes, stateHeld
	case reachable < need:
		a.Held, a.State = unknown, stateUnknown
	case a.Holders > 0:
		a.State = statePartial
	default:
		a.State = stateFree
	}
	return a
}
