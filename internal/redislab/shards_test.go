package redislab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// nodeClient returns a plain client of one node, closed with the test.
func nodeClient(t *testing.T, n *redislab.Node) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), ReadTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// Slot is CLUSTER KEYSLOT, hash tags included.
func TestSlotMatchesServer(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 1)
	ctx := testkit.Context(t, 10*time.Second)
	c := nodeClient(t, lab.Members[0].Shards[0].Primary())
	for _, k := range []string{"", "a", "stock", "quorumlock:{stock}", "{}x", "{a}{b}", "x{}{y}", "{{a}}", "}{z}", "ü"} {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
		}
		if got := redislab.Slot(k); int64(got) != want {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
}

// Each member is a cluster of its own, three shards serving a third of the
// slots each: keys spread over the shards, and members share no data.
func TestStartShardsSpreadsKeys(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 2, 3)
	ctx := testkit.Context(t, 20*time.Second)
	clients := lab.ClusterClients(t)
	for i, m := range lab.Members {
		for j, s := range m.Shards {
			info, err := nodeClient(t, s.Primary()).ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
				t.Fatalf("member %d shard %d: CLUSTER INFO = %q, %v; want ok with 3 nodes", i, j, info, err)
			}
			for _, k := range s.Keys("k", 5) {
				if err := clients[i].Set(ctx, k, i, 0).Err(); err != nil {
					t.Fatalf("member %d: SET %s: %v", i, k, err)
				}
			}
		}
	}
	for i, m := range lab.Members {
		for j, s := range m.Shards {
			if n, err := nodeClient(t, s.Primary()).DBSize(ctx).Result(); err != nil || n != 5 {
				t.Errorf("member %d shard %d: DBSIZE = %d, %v; want its own 5 keys", i, j, n, err)
			}
		}
	}
	before := lab.ScriptStats(t)
	key := lab.Members[1].Shards[2].Keys("script", 1)[0]
	for range 3 {
		if err := clients[1].Eval(ctx, "return 1", []string{key}).Err(); err != nil {
			t.Fatalf("EVAL: %v", err)
		}
	}
	after := lab.ScriptStats(t)
	for i := range after {
		for j := range after[i] {
			want := int64(0)
			if i == 1 && j == 2 {
				want = 3
			}
			if got := after[i][j].Sub(before[i][j]); got.Calls != want || (want > 0 && got.Time <= 0) {
				t.Errorf("member %d shard %d: scripts run = %+v, want %d calls with their time", i, j, got, want)
			}
		}
	}
}

// A replica cut off by CutReplica misses a write; Failover promotes it
// without that write, and the member routes the shard to it.
func TestShardFailoverToStaleReplica(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 3, redislab.WithReplicas())
	ctx := testkit.Context(t, 30*time.Second)
	m, c := lab.Members[0], lab.ClusterClients(t)[0]
	s := m.Shards[1]
	before, missed := s.Keys("before", 1)[0], s.Keys("missed", 1)[0]
	if err := c.Set(ctx, before, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", before, err)
	}
	r := s.Replica()
	testkit.Eventually(t, 5*time.Second, "the replica has the first write", func() bool { ok, _ := r.Holds(ctx, before); return ok })
	old := s.Primary()
	if err := s.CutReplica(ctx); err != nil {
		t.Fatalf("CutReplica: %v", err)
	}
	if err := c.Set(ctx, missed, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", missed, err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	if s.Primary() == old || s.Replica() != old {
		t.Fatalf("Failover did not swap primary and replica")
	}
	if got, _ := m.Owner(ctx, redislab.Slot(missed)); got != s.Primary() {
		t.Errorf("slot of %s served by %v, want the promoted node %s", missed, got, s.Primary().Addr())
	}
	for k, want := range map[string]bool{before: true, missed: false} {
		if got, err := s.Primary().Holds(ctx, k); err != nil || got != want {
			t.Errorf("promoted node holds %s = %v, %v; want %v", k, got, err, want)
		}
	}
	if n, err := c.Exists(ctx, missed).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s through the cluster client = %d, %v; want 0 (the write was missed)", missed, n, err)
	}
	if err := c.Set(ctx, missed, "again", 0).Err(); err != nil {
		t.Errorf("SET through the cluster client after the failover: %v", err)
	}
	// The old primary followed as a replica: a second failover, without a
	// cut, brings it back with every write.
	if err := s.Failover(ctx); err != nil {
		t.Fatalf("second Failover: %v", err)
	}
	if s.Primary() != old {
		t.Fatalf("the second Failover did not promote the old primary back")
	}
	if got, err := c.Get(ctx, missed).Result(); err != nil || got != "again" {
		t.Errorf("GET %s after failing back = %q, %v; want again", missed, got, err)
	}
}

// A shard whose primary was killed fails over to its replica.
func TestShardFailoverAfterKill(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 2, redislab.WithReplicas())
	ctx := testkit.Context(t, 30*time.Second)
	m, c := lab.Members[0], lab.ClusterClients(t)[0]
	s := m.Shards[0]
	key := s.Keys("kept", 1)[0]
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "the replica has the write", func() bool { ok, _ := s.Replica().Holds(ctx, key); return ok })
	if err := s.Primary().Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatalf("Failover after Kill: %v", err)
	}
	// go-redis reloads a cluster client's slot map on MOVED, or once it is
	// older than ClusterStateReloadInterval (60 s by default) — not when a
	// primary refuses connections. Here nothing answers MOVED, so the
	// client keeps dialing the dead primary until told to reload.
	c.(*redis.ClusterClient).ReloadState(ctx)
	testkit.Eventually(t, 5*time.Second, "GET through the cluster client after the failover", func() bool {
		got, err := c.Get(ctx, key).Result()
		return err == nil && got == "v"
	})
}

// MoveSlot moves a slot and its keys to another shard; the cluster client
// follows.
func TestMemberMoveSlot(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 3)
	ctx := testkit.Context(t, 30*time.Second)
	m, c := lab.Members[0], lab.ClusterClients(t)[0]
	key := m.Shards[0].Keys("moving", 1)[0]
	slot := redislab.Slot(key)
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := m.MoveSlot(ctx, slot, m.Shards[2]); err != nil {
		t.Fatalf("MoveSlot: %v", err)
	}
	if got, err := m.Owner(ctx, slot); err != nil || got != m.Shards[2].Primary() {
		t.Fatalf("owner of slot %d = %v, %v; want shard 2's primary", slot, got, err)
	}
	if n, _ := nodeClient(t, m.Shards[2].Primary()).Exists(ctx, key).Result(); n != 1 {
		t.Errorf("shard 2 lacks the moved key")
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Errorf("GET through the cluster client = %q, %v; want v", got, err)
	}
}

// An empty restart of a shard's primary keeps its identity and slots and
// drops its keys; the member's other shards keep theirs.
func TestShardEmptyRestart(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 3)
	ctx := testkit.Context(t, 30*time.Second)
	m, c := lab.Members[0], lab.ClusterClients(t)[0]
	lost, kept := m.Shards[0].Keys("lost", 1)[0], m.Shards[1].Keys("kept", 1)[0]
	for _, k := range []string{lost, kept} {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	p := m.Shards[0].Primary()
	id, _ := p.ID(ctx)
	if err := p.Restart(true); err != nil {
		t.Fatalf("Restart(true): %v", err)
	}
	start := time.Now()
	pc := nodeClient(t, p)
	testkit.Eventually(t, 10*time.Second, "the restarted primary serves again", func() bool {
		return pc.Exists(ctx, lost).Err() == nil // CLUSTERDOWN until then
	})
	t.Logf("restarted primary answered a key command %v after Restart returned", time.Since(start).Round(time.Millisecond))
	if again, _ := p.ID(ctx); again != id {
		t.Errorf("node ID after an empty restart = %s, want %s (nodes.conf kept)", again, id)
	}
	if n, err := pc.Exists(ctx, lost).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s on the restarted primary = %d, %v; want 0", lost, n, err)
	}
	if n, err := c.Exists(ctx, kept).Result(); err != nil || n != 1 {
		t.Errorf("EXISTS %s on an untouched shard = %d, %v; want 1", kept, n, err)
	}
}
