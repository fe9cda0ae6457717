package master

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// setScript writes KEYS[1]: a one-key script, which a node importing a
// slot runs after ASKING even though the key is not there yet.
const setScript = "return redis.call('set', KEYS[1], ARGV[1])"

// shardNode starts one member of three shards and returns it with a node
// over its cluster client, whose slot map is loaded.
func shardNode(t *testing.T, ctx context.Context, opts ...redislab.Option) (*redislab.Member, *Node) {
	t.Helper()
	lab := redislab.StartShards(t, 1, 3, opts...)
	nd := New(lab.ClusterClients(t)[0], time.Second)
	t.Cleanup(nd.Close)
	m := lab.Members[0]
	for _, s := range m.Shards {
		if err := nd.Call(ctx, "eval", setScript, 1, s.Keys("warm", 1)[0], "x").Err(); err != nil {
			t.Fatalf("a call to shard %d: %v", s.First, err)
		}
	}
	return m, nd
}

// A slot moved after the node loaded its slot map: the old owner answers
// MOVED, and the call is sent once more to the new one, which runs it.
func TestShardRouteFollowsMoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, nd := shardNode(t, ctx)
	key := m.Shards[0].Keys("moved", 1)[0]
	if err := m.MoveSlot(ctx, redislab.Slot(key), m.Shards[2]); err != nil {
		t.Fatalf("MoveSlot: %v", err)
	}
	if err := nd.Call(ctx, "eval", setScript, 1, key, "v").Err(); err != nil {
		t.Fatalf("a call on a slot moved since the slot map was loaded: %v; want it run by the new owner", err)
	}
	if has, err := m.Shards[2].Primary().Holds(ctx, key); err != nil || !has {
		t.Fatalf("the new owner holds %s: %v, %v; want true", key, has, err)
	}
}

// A slot being migrated, its key not on the source yet: the source answers
// ASK, and the call goes to the importing node after ASKING, on one
// connection.
func TestShardRouteFollowsAsk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, nd := shardNode(t, ctx)
	key := m.Shards[0].Keys("asked", 1)[0]
	src, dst := m.Shards[0].Primary(), m.Shards[2].Primary()
	migrating(t, ctx, redislab.Slot(key), src, dst)
	if err := nd.Call(ctx, "eval", setScript, 1, key, "v").Err(); err != nil {
		t.Fatalf("a call on a slot being migrated: %v; want it run by the importing node", err)
	}
	// A script of two keys, both missing: the importing node refuses it
	// even after ASKING (TRYAGAIN) — an error, never a vote.
	two := "{" + key + "}a"
	err := nd.Call(ctx, "eval", "return 1", 2, two, "{"+key+"}b").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Errorf("a two-key script on a slot being migrated: %v; want TRYAGAIN from the importing node", err)
	}
	// The importing node answers for the slot only after ASKING.
	c := redis.NewClient(&redis.Options{Addr: dst.Addr()})
	defer c.Close()
	pl := c.Pipeline()
	pl.Do(ctx, "asking")
	exists := pl.Exists(ctx, key)
	if _, err := pl.Exec(ctx); err != nil || exists.Val() != 1 {
		t.Fatalf("the importing node holds %s: %d, %v; want 1", key, exists.Val(), err)
	}
}

// migrating marks slot as moving from src to dst, without moving it.
func migrating(t *testing.T, ctx context.Context, slot int, src, dst *redislab.Node) {
	t.Helper()
	srcID, err1 := src.ID(ctx)
	dstID, err2 := dst.ID(ctx)
	if err1 != nil || err2 != nil {
		t.Fatalf("node IDs: %v, %v", err1, err2)
	}
	for _, step := range []struct {
		n    *redislab.Node
		args []any
	}{
		{dst, []any{"cluster", "setslot", slot, "importing", srcID}},
		{src, []any{"cluster", "setslot", slot, "migrating", dstID}},
	} {
		c := redis.NewClient(&redis.Options{Addr: step.n.Addr()})
		err := c.Do(ctx, step.args...).Err()
		c.Close()
		if err != nil {
			t.Fatalf("%v on %s: %v", step.args, step.n.Addr(), err)
		}
	}
}

// A route unused for routeIdle is dropped, its pipe closed, once a new
// primary is met: a primary that lost its slots keeps no client.
func TestShardRouteDropsIdleRoutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, nd := shardNode(t, ctx)
	s := nd.shards
	idle := s.routes[m.Shards[1].Primary().Addr()]
	if idle == nil || len(s.routes) != 3 {
		t.Fatalf("routes after a call to each shard: %d, shard 1's %v; want 3, one to shard 1", len(s.routes), idle)
	}
	idle.used.Store(time.Now().Add(-routeIdle).UnixNano())
	gone := m.Shards[2].Primary().Addr() // met anew below
	s.routes[gone].close()
	delete(s.routes, gone)
	if err := nd.Call(ctx, "eval", setScript, 1, m.Shards[2].Keys("again", 1)[0], "v").Err(); err != nil {
		t.Fatalf("a call to shard 2: %v", err)
	}
	if _, ok := s.routes[m.Shards[1].Primary().Addr()]; ok || len(s.routes) != 2 {
		t.Errorf("routes after a new primary was met: %d, shard 1's kept %v; want 2, shard 1's dropped", len(s.routes), ok)
	}
	if err := idle.pipe.Do(ctx, "ping").Err(); !errors.Is(err, autopipe.ErrClosed) {
		t.Errorf("the dropped route's pipe: %v; want closed", err)
	}
}

// A primary killed and its replica promoted: nothing answers MOVED, yet
// the calls find the new primary soon, since a call that cannot reach a
// primary reloads the slot map (go-redis alone would wait for its 60 s
// reload interval).
func TestShardRouteFindsPromotedReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, nd := shardNode(t, ctx, redislab.WithReplicas())
	s := m.Shards[0]
	if err := s.Primary().Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	key := s.Keys("promoted", 1)[0]
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err = nd.Call(ctx, "eval", setScript, 1, key, "v").Err(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("calls on shard 0 five seconds after its replica was promoted: %v; want them run by the new primary", err)
}
