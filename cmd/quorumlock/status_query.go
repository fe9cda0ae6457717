package main

import (
	"context"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// queryOnce reads every node's view of the key under --timeout
// (redlock.Inspect: the library reads its own layout, each node in one
// round trip, all in parallel), and tallies. A node's failure is its row
// of the table, so it stops none of the others. Only a key or prefix the
// library refuses is an error (ErrInvalid).
func queryOnce(ctx context.Context, ns *nodeSet, f *statusFlags) (*lockStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	in, err := redlock.Inspect(ctx, ns.universal(), f.key, f.limit, redlock.WithPrefix(f.prefix))
	if err != nil {
		return nil, err
	}
	n := len(ns.clients)
	st := &lockStatus{Key: f.key, LockKey: in.Names.Lock, FenceKey: in.Names.Fence, ReadersKey: in.Names.Readers,
		Nodes: make([]nodeStatus, n), Need: quorum.Majority(n)}
	if f.limit > 0 {
		st.Semaphore = newSemaphore(&in)
	}
	for i, node := range in.Nodes {
		st.setNode(i, node)
		st.setAddr(i, redactAddr(ns.addrs[i])+clusterText(node))
	}
	st.tally()
	st.tallyGuard(f.guardSetting)
	return st, nil
}

// clusterText is what the NODE column adds to a cluster node's address:
// the primary that serves the key's slot, which answered for it.
func clusterText(n redlock.NodeInspection) string {
	switch {
	case !n.Cluster:
		return ""
	case n.Primary == "":
		return " (cluster)"
	}
	return " (cluster primary " + redactAddr(n.Primary) + ")"
}

// setNode records what node i said.
func (st *lockStatus) setNode(i int, in redlock.NodeInspection) {
	if in.Err != nil {
		st.failed(i, in.Err)
		return
	}
	st.setStart(i, in)
	n := &st.Nodes[i]
	n.holderStatus = holderOf(in.Writer)
	n.readers, n.Readers = in.Readers, len(in.Readers)
	n.limit = in.Limit
	if st.Semaphore != nil {
		st.Semaphore.setNode(i, in)
	}
}

// holderOf is a node's row of one lock, from what it holds.
func holderOf(h redlock.HoldState) holderStatus {
	return holderStatus{Reachable: true, Owner: h.Owner, TTLMillis: h.TTL.Milliseconds(), Holds: int64(h.Holds), Fence: h.Fence}
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
