package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// A semaphore is the view over all nodes of the permits of one name, as
// run --limit (the library's Acquire) holds them.
type semaphore struct {
	Name     string          `json:"name"`
	Limit    int             `json:"limit"` // as given by --limit
	LimitKey string          `json:"limit_key"`
	QueueKey string          `json:"queue_key"`
	Nodes    []semaphoreNode `json:"nodes"`
	Permits  []permitStatus  `json:"permits"`
	Held     int             `json:"held"` // permits held on a majority
	// Detected: status was not given --limit, and read Limit from the
	// nodes' limit record (the largest one).
	Detected bool `json:"detected,omitempty"`
}

// A semaphoreNode is what one node says about a semaphore as a whole.
type semaphoreNode struct {
	Addr      string `json:"addr"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Limit     int64  `json:"limit"`   // the limit its holders were granted with here; 0 when none is recorded
	Waiters   int64  `json:"waiters"` // waiters in line here: live ones, and any whose lease ended since the last attempt
}

// A permitStatus is the view of one permit over all nodes.
type permitStatus struct {
	Permit   int            `json:"permit"`
	LockKey  string         `json:"lock_key"`
	FenceKey string         `json:"fence_key"`
	Nodes    []holderStatus `json:"nodes"`
	agreement
}

// newSemaphore returns the empty view of the permits that in read.
func newSemaphore(in *redlock.Inspection) *semaphore {
	n, limit := len(in.Nodes), len(in.Permits)
	s := &semaphore{Name: in.Key, Limit: limit, LimitKey: in.LimitKey, QueueKey: in.QueueKey,
		Nodes: make([]semaphoreNode, n), Permits: make([]permitStatus, limit)}
	for i, names := range in.Permits {
		s.Permits[i] = permitStatus{Permit: i, LockKey: names.Lock, FenceKey: names.Fence, Nodes: make([]holderStatus, n)}
	}
	return s
}

// setNode records what node n, which answered, said of the semaphore.
func (s *semaphore) setNode(n int, in redlock.NodeInspection) {
	s.Nodes[n] = semaphoreNode{Reachable: true, Limit: int64(in.Limit), Waiters: in.Waiters}
	for i, h := range in.Permits {
		s.Permits[i].Nodes[n] = holderOf(h)
	}
}

// failed records that node n did not answer.
func (s *semaphore) failed(n int, err error) {
	s.Nodes[n] = semaphoreNode{Error: err.Error()}
	for i := range s.Permits {
		s.Permits[i].Nodes[n] = holderStatus{Error: err.Error()}
	}
}

// setAddr names node n in every view of it.
func (s *semaphore) setAddr(n int, addr string) {
	s.Nodes[n].Addr = addr
	for i := range s.Permits {
		s.Permits[i].Nodes[n].Addr = addr
	}
}

// tally finds each permit's holder and counts the permits held.
func (s *semaphore) tally(need, reachable int) {
	for i := range s.Permits {
		p := &s.Permits[i]
		owners := make([]string, len(p.Nodes))
		for n, h := range p.Nodes {
			owners[n] = h.Owner
		}
		p.agreement = agree(owners, need, reachable)
		if p.Held == yes {
			s.Held++
		}
	}
}

// printSemaphore writes s as a line per node, a line per permit and node,
// and a verdict per permit; st is the status s is part of.
func printSemaphore(w io.Writer, s *semaphore, st *lockStatus) error {
	fmt.Fprintf(w, "\nsemaphore %q, limit %d: %d of %d permits held (limit %s, waiters %s)\n",
		s.Name, s.Limit, s.Held, s.Limit, s.LimitKey, s.QueueKey)
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tLIMIT\tWAITERS")
	for _, n := range s.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Addr, countText(n.Reachable && n.Limit > 0, n.Limit), countText(n.Reachable, n.Waiters))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "PERMIT\tNODE\tSTATE\tOWNER\tTTL\tHOLDS\tFENCE")
	for _, p := range s.Permits {
		for _, n := range p.Nodes {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Permit, n.Addr, nodeState(&n), orDash(n.Owner),
				ttlText(&n), countText(n.Owner != "", n.Holds), countText(n.Reachable, n.Fence))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range s.Permits {
		if _, err := fmt.Fprintf(w, "permit %d: %s\n", p.Permit, verdict(p.agreement, st)); err != nil {
			return err
		}
	}
	return nil
}

// query is queryOnce, then, without --limit, once more with the limit the
// nodes record for a semaphore of the name, if any: permits of --key held
// by run --limit must not read as a free key.
func query(ctx context.Context, ns *nodeSet, f *statusFlags) (*lockStatus, error) {
	st, err := queryOnce(ctx, ns, f)
	if err != nil || f.limit > 0 {
		return st, err
	}
	limit := 0
	for _, n := range st.Nodes {
		if n.limit >= 1 && n.limit <= redlock.MaxLimit {
			limit = max(limit, n.limit)
		}
	}
	if limit == 0 {
		return st, nil
	}
	again := *f
	again.limit = limit
	if st, err = queryOnce(ctx, ns, &again); err != nil {
		return nil, err
	}
	st.Semaphore.Detected = true
	return st, nil
}

// semaphoreLine says, when no node holds the key as a lock but a node
// holds a permit of the semaphore of the same name, how many permits a
// majority holds; "" otherwise (the verdict on the key says it all).
func semaphoreLine(st *lockStatus) string {
	s := st.Semaphore
	if s == nil || st.Holders > 0 || !slices.ContainsFunc(s.Permits, func(p permitStatus) bool { return p.Holders > 0 }) {
		return ""
	}
	from := "--limit"
	if s.Detected {
		from = "read from the nodes"
	}
	return fmt.Sprintf("permits held: %d of %d permits of semaphore %q held on a majority (limit %d, %s); no node holds %q as a lock",
		s.Held, s.Limit, s.Name, s.Limit, from, st.Key)
}
