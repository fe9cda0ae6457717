package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// defaultStatusTimeout bounds each node's status query.
const defaultStatusTimeout = 500 * time.Millisecond

// A nodeStatus is what one node says about a lock.
type nodeStatus struct {
	Addr      string `json:"addr"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Owner     string `json:"owner,omitempty"`  // the holder's owner value; empty when free
	TTLMillis int64  `json:"ttl_ms,omitempty"` // remaining lease (PTTL), when held
	Holds     int64  `json:"holds,omitempty"`  // the owner's holds (one per Lock, more when nested)
	Fence     int64  `json:"fence"`            // fencing counter: the last token this node issued
}

// A lockStatus is the view of one lock over all nodes.
type lockStatus struct {
	Key       string       `json:"key"`
	LockKey   string       `json:"lock_key"`
	FenceKey  string       `json:"fence_key"`
	Nodes     []nodeStatus `json:"nodes"`
	Need      int          `json:"need"`            // a majority of the nodes (quorum.Majority)
	Reachable int          `json:"reachable"`       // nodes that answered
	Owner     string       `json:"owner,omitempty"` // the owner held on most nodes
	Holders   int          `json:"holders"`         // nodes that hold Owner
	Held      bool         `json:"held"`            // Holders ≥ Need
}

func (c *cli) status(args []string) int {
	fs := newFlagSet("status")
	var t target
	t.register(fs, c.getenv, "the lock's `name` (required)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", defaultStatusTimeout, "timeout of the query to each node")
	if code, ok := c.parse(fs, statusUsage, args); !ok {
		return code
	}
	addrs, err := statusCheck(fs, &t, *timeout)
	if err != nil {
		return c.usageError(fs, err)
	}
	ns, err := dial(addrs)
	if err != nil {
		return c.usageError(fs, err)
	}
	defer ns.close()
	st := query(context.Background(), ns, &t, *timeout)
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(st)
	} else {
		err = printStatus(c.stdout, st)
	}
	switch {
	case err != nil:
		fmt.Fprintf(c.stderr, "quorumlock status: %v\n", err)
		return exitInternal
	case st.Reachable < st.Need:
		fmt.Fprintf(c.stderr, "quorumlock status: only %d of %d nodes answered, a majority is %d\n",
			st.Reachable, len(st.Nodes), st.Need)
		return exitUnavailable
	}
	return exitOK
}

func statusCheck(fs *flag.FlagSet, t *target, timeout time.Duration) ([]string, error) {
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	addrs, err := t.check()
	if err != nil {
		return nil, err
	}
	return addrs, positive("timeout", timeout)
}

// query asks every node in parallel, each under timeout, and tallies.
func query(ctx context.Context, ns *nodeSet, t *target, timeout time.Duration) *lockStatus {
	names := redlock.Keys(t.prefix, t.key)
	st := &lockStatus{Key: t.key, LockKey: names.Lock, FenceKey: names.Fence,
		Nodes: make([]nodeStatus, len(ns.clients)), Need: quorum.Majority(len(ns.clients))}
	var wg sync.WaitGroup
	for i, rdb := range ns.clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st.Nodes[i] = queryNode(ctx, rdb, names.Lock, names.Fence)
			st.Nodes[i].Addr = ns.addrs[i]
		})
	}
	wg.Wait()
	st.tally()
	return st
}

// queryNode reads one node's view of the lock in one round trip.
func queryNode(ctx context.Context, rdb *redis.Client, lockKey, fenceKey string) nodeStatus {
	pipe := rdb.Pipeline()
	owner := pipe.HGet(ctx, lockKey, "owner")
	pttl := pipe.Do(ctx, "PTTL", lockKey)
	hlen := pipe.HLen(ctx, lockKey)
	fence := pipe.Get(ctx, fenceKey)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nodeStatus{Error: err.Error()}
	}
	ns := nodeStatus{Reachable: true, Owner: owner.Val()}
	ns.Fence, _ = fence.Int64() // absent: 0
	if ns.Owner != "" {
		ns.TTLMillis, _ = pttl.Int64()
		ns.Holds = hlen.Val() - 1 // every field but "owner"
	}
	return ns
}

// tally counts the reachable nodes and the owner held on most of them.
func (st *lockStatus) tally() {
	counts := map[string]int{}
	for _, n := range st.Nodes {
		if n.Reachable {
			st.Reachable++
		}
		if n.Owner != "" {
			counts[n.Owner]++
		}
	}
	for owner, k := range counts {
		if k > st.Holders || (k == st.Holders && owner < st.Owner) {
			st.Owner, st.Holders = owner, k
		}
	}
	st.Held = st.Holders >= st.Need
}

const statusUsage = `Usage: quorumlock status --nodes host:port,... --key K [--json]

Show what each node holds for lock K: the holder's owner value, the remaining
TTL, the number of holds, and the fencing counter (the last token the node
issued); whether the node answered; and whether a majority of nodes holds the
same owner, which is when the lock is held. Each node is queried in parallel
under --timeout.

Flags:
{{flags}}
Exit status:
  0    a majority of nodes answered (the lock may be held or free)
  2    bad flags or arguments
  69   fewer than a majority of nodes answered (EX_UNAVAILABLE)

Examples:
  quorumlock status --nodes r1:6379,r2:6379,r3:6379 --key nightly-report
  quorumlock status --key nightly-report --json | jq .held
`
