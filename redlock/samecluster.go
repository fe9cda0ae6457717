package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrSameCluster is the error of every acquisition, and of every call to
// the two members concerned, once a Client has found two of its members to
// be one Redis Cluster — a cluster given twice through seeds New could not
// tell apart (member A seeded with one node, member B with another; or a
// plain client of a cluster node beside a cluster client of that cluster),
// or one Sentinel master set given twice (two failover clients of it,
// found by the master they reach: masterIDs). The quorum counts independent masters, so that configuration is invalid:
// neither member is counted again, and no lock is granted until the Client
// is built with each cluster once. It is a lasting failure: a waiting
// acquisition returns it at once. Two members are found to be one when
// their reads of the node IDs (started by New) meet; until its read has
// answered, a member's replies are not counted.
var ErrSameCluster = errors.New("redlock: two members are one Redis Cluster; neither is counted")

// identities is what a Client learnt of its members' Redis Cluster node
// IDs (a Sentinel member's master identities), each read once, from the first call to the member on (firstContact):
// a member's replies count only once it is read and no other member shares
// one of its IDs.
type identities struct {
	cleared []atomic.Bool           // per member: read, and sharing no ID when it was
	refused []atomic.Pointer[error] // per member: its ErrSameCluster error, once found
	twin    atomic.Pointer[error]   // the first ErrSameCluster error found

	mu     sync.Mutex
	ids    []map[string]bool // per member: its cluster's node IDs; empty outside cluster mode
	known  []bool
	flight []*idRead // per member: the read in flight, if any
}

// An idRead is one read of a member's node IDs, run in the background.
type idRead struct {
	done chan struct{} // closed when it ended
	err  error         // why it failed, once done
}

func newIdentities(n int) *identities {
	return &identities{cleared: make([]atomic.Bool, n), refused: make([]atomic.Pointer[error], n),
		ids: make([]map[string]bool, n), known: make([]bool, n), flight: make([]*idRead, n)}
}

// sameCluster returns the ErrSameCluster error once two members were found
// to be one cluster, else nil.
func (s *identities) sameCluster() error {
	if e := s.twin.Load(); e != nil {
		return *e
	}
	return nil
}

// firstContact returns nil, nil once member n is cleared, and its
// ErrSameCluster error once refused. Before that, it returns the read of
// n's IDs in flight, started now if none is: the caller sends its call
// beside it, then counts the reply only if admitted says so.
//
// On a cluster member the read goes to the primary owning key's slot (a
// call's first key; "" in New): one that answers the call answers it too.
func (c *Client) firstContact(n int, key string) (*idRead, error) {
	s := c.ids
	if e := s.refused[n].Load(); e != nil {
		return nil, *e
	}
	if s.cleared[n].Load() {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.refused[n].Load(); e != nil { // read meanwhile
		return nil, *e
	}
	if s.cleared[n].Load() {
		return nil, nil
	}
	if r := s.flight[n]; r != nil {
		return r, nil
	}
	r := &idRead{done: make(chan struct{})}
	s.flight[n] = r
	c.wg.Add(1) // in New, or inside the caller's counted call: never while Close waits
	go c.readIDs(n, key, r)
	return r, nil
}

// readIDs reads member n's node IDs under a budget of its own — that of
// the background connection set-up, so that a slow handshake still ends
// in a read — and files them (register); Close cuts it short.
func (c *Client) readIDs(n int, key string, r *idRead) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 4*socketBound(c.cfg.nodeTimeout))
	defer cancel()
	var ids map[string]bool
	var err error
	read := make(chan struct{})
	go func() {
		defer close(read)
		ids, err = c.memberIDs(ctx, n, key)
	}()
	select {
	case <-read:
	case <-c.done:
		cancel()
		<-read
	}
	s := c.ids
	s.mu.Lock()
	s.flight[n], r.err = nil, err
	if err == nil {
		s.register(n, ids)
	}
	s.mu.Unlock()
	close(r.done)
}

// admitted waits, under ctx, for r, the read of member n's IDs, and
// returns nil if n's replies may be counted: it was read and cleared.
func (r *idRead) admitted(ctx context.Context, s *identities, n int) error {
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
func (s *identities) register(n int, ids map[string]bool) {
	s.ids[n], s.known[n] = ids, true
	for m, other := range s.ids {
		if m == n || !s.known[m] {
			continue
		}
		for id := range ids {
			if !other[id] {
				continue
			}
			e := fmt.Errorf("%w: members %d and %d both reach %s; give each cluster or Sentinel master set once: the quorum needs independent masters", ErrSameCluster, min(m, n), max(m, n), named(id))
			s.refused[n].Store(&e)
			s.refused[m].CompareAndSwap(nil, &e)
			s.twin.CompareAndSwap(nil, &e)
			return
		}
	}
	s.cleared[n].Store(true)
}

// named describes an identity of register: a cluster node ID, or one of
// masterIDs' (which say what they are).
func named(id string) string {
	if strings.Contains(id, " ") {
		return id
	}
	return "cluster node " + id
}

// masterIDs returns the identities of the master of a Sentinel member,
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

// memberIDs reads member n's node IDs (clusterIDs) through its route —
// on a cluster member, that of the primary owning key's slot — so that the
// read shares the connections, and the batches, of its calls. A ring's
// shards are each asked directly.
func (c *Client) memberIDs(ctx context.Context, n int, key string) (map[string]bool, error) {
	nd := c.nodes[n]
	switch {
	case nd.failover:
		return masterIDs(func(args ...any) *redis.Cmd { return nd.main.call(ctx, nd.late, false, args) })
	case nd.shards != nil:
		return clusterIDs(func(args ...any) *redis.Cmd {
			r, err := nd.shards.owner(ctx, key)
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
