package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrSameCluster is the error of every call to two members found to be
// one Redis Cluster, or one Sentinel master set (MemberIDs).
var ErrSameCluster = errors.New("redlock: two members are one Redis Cluster; neither is counted")

// MemberIDs is what a Client learnt of its members' Redis Cluster node
// IDs (a Sentinel member's master IDs: masterIDs), each read once, from
// the first call to the member on (Contact): a member's replies count only
// once it is read and no other member shares one of its IDs.
type MemberIDs struct {
	cleared []atomic.Bool           // per member: read, and sharing no ID when it was
	refused []atomic.Pointer[error] // per member: its ErrSameCluster error, once found
	shared  atomic.Pointer[error]   // the first ErrSameCluster error found

	mu     sync.Mutex
	ids    []map[string]bool // per member: its cluster's node IDs; empty outside cluster mode
	known  []bool
	flight []*IDRead // per member: the read in flight, if any
}

// An IDRead is one read of a member's node IDs, run in the background.
type IDRead struct {
	done chan struct{} // closed when it ended
	err  error         // why it failed, once done
}

// NewMemberIDs returns the IDs of n members, none read yet.
func NewMemberIDs(n int) *MemberIDs {
	return &MemberIDs{cleared: make([]atomic.Bool, n), refused: make([]atomic.Pointer[error], n),
		ids: make([]map[string]bool, n), known: make([]bool, n), flight: make([]*IDRead, n)}
}

// SameCluster returns the ErrSameCluster error once two members were found
// to be one cluster, else nil.
func (s *MemberIDs) SameCluster() error {
	if e := s.shared.Load(); e != nil {
		return *e
	}
	return nil
}

// Contact returns nil, false, nil once member n is cleared, and its
// ErrSameCluster error once refused. Before that, it returns the read of
// n's IDs in flight; start says that there was none, and that the caller
// must run this one (Node.ReadIDs) and file its outcome (Filed). The
// caller sends its call beside the read, then counts the reply only if
// Admitted says so.
func (s *MemberIDs) Contact(n int) (r *IDRead, start bool, err error) {
	if e := s.refused[n].Load(); e != nil {
		return nil, false, *e
	}
	if s.cleared[n].Load() {
		return nil, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.refused[n].Load(); e != nil { // read meanwhile
		return nil, false, *e
	}
	if s.cleared[n].Load() {
		return nil, false, nil
	}
	if r := s.flight[n]; r != nil {
		return r, false, nil
	}
	r = &IDRead{done: make(chan struct{})}
	s.flight[n] = r
	return r, true, nil
}

// Filed files the outcome of r, the read of member n's IDs that Contact
// started: its IDs, or why it failed.
func (s *MemberIDs) Filed(n int, r *IDRead, ids map[string]bool, err error) {
	s.mu.Lock()
	s.flight[n], r.err = nil, err
	if err == nil {
		s.register(n, ids)
	}
	s.mu.Unlock()
	close(r.done)
}

// Admitted waits, under ctx, for r, the read of member n's IDs, and
// returns nil if n's replies may be counted: it was read and cleared.
func (r *IDRead) Admitted(ctx context.Context, s *MemberIDs, n int) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		return fmt.Errorf("redlock: reply not counted: the member's cluster node IDs (to check that no other member is the same cluster) not read yet: %w", ctx.Err())
	}
	if e := s.refused[n].Load(); e != nil {
		return *e
	}
	return r.err
}

// register files member n's node IDs, under s.mu. A member sharing one
// with another identified member is not cleared, and both are refused for
// good: every later call to either fails, naming both.
func (s *MemberIDs) register(n int, ids map[string]bool) {
	s.ids[n], s.known[n] = ids, true
	for m, other := range s.ids {
		if m == n || !s.known[m] {
			continue
		}
		for id := range ids {
			if !other[id] {
				continue
			}
			e := fmt.Errorf("%w: members %d and %d both reach %s; give each cluster or Sentinel master set once: the quorum needs independent masters", ErrSameCluster, min(m, n), max(m, n), describeID(id))
			s.refused[n].Store(&e)
			s.refused[m].CompareAndSwap(nil, &e)
			s.shared.CompareAndSwap(nil, &e)
			return
		}
	}
	s.cleared[n].Store(true)
}

// describeID describes an ID of register: a cluster node ID, or one of
// masterIDs' (which say what they are).
func describeID(id string) string {
	if strings.Contains(id, " ") {
		return id
	}
	return "cluster node " + id
}

// masterIDs returns the IDs of the master of a Sentinel member,
// as do reaches it: its process (run_id) and its replication histories
// (master_replid, and master_replid2 if it has one) — the latter shared
// by every server of its master set, so that two members of one set
// meet even when a failover came between their first contacts.
func masterIDs(do doer) (map[string]bool, error) {
	info, err := do("info", "server", "replication").Text()
	if err != nil {
		return nil, fmt.Errorf("redlock: INFO (to check that no other member is the same master set): %w", err)
	}
	ids := map[string]bool{}
	for _, f := range []string{"run_id", "master_replid", "master_replid2"} {
		if v := infoField(info, f); v != "" && strings.Trim(v, "0") != "" {
			ids[f+" "+v] = true
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("redlock: INFO server has no run_id (to check that no other member is the same master set)")
	}
	return ids, nil
}

// A doer sends one command to a member (or to one shard of a ring).
type doer func(args ...any) *redis.Cmd

// ReadIDs reads the node's cluster node IDs (clusterIDs; a Sentinel
// member's master IDs: masterIDs) through its route — on a cluster member,
// that of the primary owning key's slot ("" in New), so that the read
// shares the connections, and the batches, of its calls: one that answers
// the call answers it too. A ring's shards are each asked directly.
func (nd *Node) ReadIDs(ctx context.Context, key string) (map[string]bool, error) {
	switch {
	case nd.failover:
		return masterIDs(func(args ...any) *redis.Cmd { return nd.main.call(ctx, nd.late, false, args) })
	case nd.shards != nil:
		return clusterIDs(func(args ...any) *redis.Cmd {
			r, err := nd.shards.primaryFor(ctx, key)
			if err != nil {
				return failedCmd(ctx, args, err)
			}
			return r.call(ctx, nd.late, false, args)
		})
	case nd.main != nil:
		if _, ok := nd.rdb.(*redis.Ring); !ok {
			return clusterIDs(func(args ...any) *redis.Cmd { return nd.main.call(ctx, nd.late, false, args) })
		}
	}
	ring, ok := nd.rdb.(*redis.Ring)
	if !ok { // a cluster client used as given: its own routing
		return clusterIDs(func(args ...any) *redis.Cmd { return nd.rdb.Do(ctx, args...) })
	}
	ids := map[string]bool{}
	var mu sync.Mutex
	err := ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
		got, err := clusterIDs(func(args ...any) *redis.Cmd { return shard.Do(ctx, args...) })
		mu.Lock()
		defer mu.Unlock()
		for id := range got {
			ids[id] = true
		}
		return err
	})
	return ids, err
}

// clusterIDs returns the node IDs of the Redis Cluster that do talks to —
// every node, replicas included, as one of its nodes sees them (CLUSTER
// SHARDS, or CLUSTER NODES on servers older than 7.0) — or none for a
// server not in cluster mode: INFO server does not say redis_mode:cluster
// (a server without that section, such as an embedded fake, is not a
// cluster; a user refused INFO is judged by CLUSTER alone), or CLUSTER
// answers that cluster support is disabled or unknown. INFO and CLUSTER
// SHARDS are sent at once.
func clusterIDs(do doer) (map[string]bool, error) {
	var info, shards *redis.Cmd
	var wg sync.WaitGroup
	wg.Go(func() { info = do("info", "server") })
	wg.Go(func() { shards = do("cluster", "shards") })
	wg.Wait()
	ids := map[string]bool{}
	if standalone(info) {
		return ids, nil
	}
	err := shards.Err()
	if redis.HasErrorPrefix(err, "unknown subcommand") {
		return nodesIDs(do)
	}
	if notCluster(err) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redlock: CLUSTER SHARDS (to check that no other member is the same cluster): %w", err)
	}
	collectIDs(shards.Val(), ids)
	return ids, nil
}

// collectIDs adds to ids the "id" of every node that CLUSTER SHARDS's
// reply v names: maps in RESP3, flat key-value lists in RESP2.
func collectIDs(v any, ids map[string]bool) {
	switch v := v.(type) {
	case map[any]any:
		if id, ok := v["id"].(string); ok {
			ids[id] = true
		}
		for _, e := range v {
			collectIDs(e, ids)
		}
	case []any:
		for i, e := range v {
			if k, ok := e.(string); ok && k == "id" && i%2 == 0 && i+1 < len(v) {
				if id, ok := v[i+1].(string); ok {
					ids[id] = true
				}
			}
			collectIDs(e, ids)
		}
	}
}

// standalone reports whether INFO server's answer shows a server not in
// cluster mode: it answered without redis_mode:cluster, or refused the
// section for another reason than the user's rights (a server without it).
// Without an answer, CLUSTER's says why.
func standalone(info *redis.Cmd) bool {
	text, err := info.Text()
	var re redis.Error
	switch {
	case err == nil:
		return !strings.Contains(text, "redis_mode:cluster")
	case errors.As(err, &re):
		return !strings.HasPrefix(re.Error(), "NOPERM")
	}
	return false
}

// nodesIDs is clusterIDs through CLUSTER NODES, for servers before 7.0.
func nodesIDs(do doer) (map[string]bool, error) {
	ids := map[string]bool{}
	nodes, err := do("cluster", "nodes").Text()
	if notCluster(err) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redlock: CLUSTER NODES (to check that no other member is the same cluster): %w", err)
	}
	for line := range strings.SplitSeq(nodes, "\n") {
		if id, _, _ := strings.Cut(line, " "); id != "" {
			ids[id] = true
		}
	}
	return ids, nil
}

// notCluster reports whether err is a server's answer that it is not in
// cluster mode ("ERR This instance has cluster support disabled"; other
// servers of the protocol word it alike), or has no CLUSTER command at all.
// Any other error — LOADING, NOPERM, a timeout — leaves the member unread.
func notCluster(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(re.Error())
	return strings.HasPrefix(msg, "err unknown command") ||
		strings.Contains(msg, "cluster") && (strings.Contains(msg, "disabled") || strings.Contains(msg, "not enabled"))
}
