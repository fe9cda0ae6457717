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
// plain client of a cluster node beside a cluster client of that cluster).
// The quorum counts independent masters, so that configuration is invalid:
// neither member is counted again, and no lock is granted until the Client
// is built with each cluster once. See the package doc ("One cluster, one
// member").
var ErrSameCluster = errors.New("redlock: two members are one Redis Cluster; neither is counted")

// identities is what a Client learnt of its members' Redis Cluster node
// IDs, each read once, at the first call to the member (identify): a
// member's calls are sent only once it is identified and no other member
// shares one of its IDs.
type identities struct {
	cleared []atomic.Bool           // per member: identified, and sharing no ID when it was
	refused []atomic.Pointer[error] // per member: its ErrSameCluster error, once found
	twin    atomic.Pointer[error]   // the first ErrSameCluster error found

	mu     sync.Mutex
	ids    []map[string]bool // per member: its cluster's node IDs; empty outside cluster mode
	known  []bool
	flight []chan struct{} // per member: closed when the identification in flight ends
}

func newIdentities(n int) *identities {
	return &identities{cleared: make([]atomic.Bool, n), refused: make([]atomic.Pointer[error], n),
		ids: make([]map[string]bool, n), known: make([]bool, n), flight: make([]chan struct{}, n)}
}

// sameCluster returns the ErrSameCluster error once two members were found
// to be one cluster, else nil.
func (s *identities) sameCluster() error {
	if e := s.twin.Load(); e != nil {
		return *e
	}
	return nil
}

// identify returns nil once member n may be called: identified, and no
// other member shares its cluster. At the first call it reads n's node
// IDs (clusterIDs) under ctx — one read in flight per member, the other
// callers wait for it or their ctx — and compares them with every member
// already identified. It returns the read's error if that failed (the next
// call tries again), and ErrSameCluster's error for both members of a
// cluster given twice, for good.
func (s *identities) identify(ctx context.Context, n int, rdb redis.UniversalClient) error {
	for {
		if e := s.refused[n].Load(); e != nil {
			return *e
		}
		if s.cleared[n].Load() {
			return nil
		}
		s.mu.Lock()
		if s.known[n] { // known, not cleared: refused (above) by now
			s.mu.Unlock()
			continue
		}
		if ch := s.flight[n]; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return fmt.Errorf("redlock: waiting for the member's cluster node IDs: %w", ctx.Err())
			}
		}
		ch := make(chan struct{})
		s.flight[n] = ch
		s.mu.Unlock()
		ids, err := clusterIDs(ctx, rdb)
		s.mu.Lock()
		s.flight[n] = nil
		close(ch)
		if err == nil {
			s.register(n, ids)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
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
			e := fmt.Errorf("%w: members %d and %d both reach cluster node %s; give each cluster once (one seed list): the quorum needs independent masters", ErrSameCluster, min(m, n), max(m, n), id)
			s.refused[n].Store(&e)
			s.refused[m].CompareAndSwap(nil, &e)
			s.twin.CompareAndSwap(nil, &e)
			return
		}
	}
	s.cleared[n].Store(true)
}

// clusterIDs returns the node IDs of the Redis Cluster rdb talks to — every
// node, replicas included, as one of its nodes sees them (CLUSTER SHARDS,
// or CLUSTER NODES on servers older than 7.0) — or none for a server not in
// cluster mode: INFO server does not say redis_mode:cluster (a server
// without that section, such as an embedded fake, is not a cluster; a user
// refused INFO is judged by CLUSTER alone), or CLUSTER answers that cluster
// support is disabled or unknown. Both are asked in one round trip. On a
// ring, every shard is asked.
func clusterIDs(ctx context.Context, rdb redis.UniversalClient) (map[string]bool, error) {
	ids := map[string]bool{}
	if ring, ok := rdb.(*redis.Ring); ok {
		var mu sync.Mutex
		err := ring.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			got, err := clusterIDs(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			for id := range got {
				ids[id] = true
			}
			return err
		})
		return ids, err
	}
	var info *redis.StringCmd
	var sh *redis.ClusterShardsCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		info, sh = p.Info(ctx, "server"), p.ClusterShards(ctx)
		return nil
	})
	if standalone(info) {
		return ids, nil
	}
	shards, err := sh.Result()
	if isRedisError(err, "ERR unknown subcommand") {
		return nodesIDs(ctx, rdb)
	}
	if notCluster(err) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redlock: CLUSTER SHARDS (to check that no other member is the same cluster): %w", err)
	}
	for _, sh := range shards {
		for _, nd := range sh.Nodes {
			ids[nd.ID] = true
		}
	}
	return ids, nil
}

// standalone reports whether INFO server's answer shows a server not in
// cluster mode: it answered without redis_mode:cluster, or refused the
// section for another reason than the user's rights (a server without it).
// Without an answer, CLUSTER's says why.
func standalone(info *redis.StringCmd) bool {
	text, err := info.Result()
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
func nodesIDs(ctx context.Context, rdb redis.UniversalClient) (map[string]bool, error) {
	ids := map[string]bool{}
	nodes, err := rdb.ClusterNodes(ctx).Result()
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

func isRedisError(err error, prefix string) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), prefix)
}
