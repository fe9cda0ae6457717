package redislab_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// What a script, and the library, can learn of the shard that answers: the
// facts docs/SHARDS.md builds on, checked on Redis 7.0. A script runs on
// the primary that owns its key, whose INFO server and CLUSTER MYID it
// reads (ROLE it may not call). A replica promoted by TAKEOVER keeps its
// run_id, uptime and LASTSAVE — nothing restart detection looks at
// changes — while its replication ID and config epoch change.
func TestShardFacts(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 3, redislab.WithReplicas())
	ctx := testkit.Context(t, 30*time.Second)
	m, c := lab.Members[0], lab.ClusterClients(t)[0]
	for i, s := range m.Shards {
		key := s.Keys("fact", 1)[0]
		info, err := c.Eval(ctx, "return redis.call('INFO', 'server')", []string{key}).Text()
		if want := fact(t, nodeClient(t, s.Primary()), "run_id"); err != nil || field(info, "run_id") != want {
			t.Errorf("shard %d: INFO server in a script says run_id %q (%v), want the owner's %s", i, field(info, "run_id"), err, want)
		}
		id, err := c.Eval(ctx, "return redis.call('CLUSTER', 'MYID')", []string{key}).Text()
		if want, _ := s.Primary().ID(ctx); err != nil || id != want {
			t.Errorf("shard %d: CLUSTER MYID in a script = %q (%v), want the owner's %s", i, id, err, want)
		}
		if err := c.Eval(ctx, "return redis.call('ROLE')", []string{key}).Err(); err == nil || !strings.Contains(err.Error(), "not allowed from script") {
			t.Errorf("shard %d: ROLE in a script: err = %v, want not allowed", i, err)
		}
	}
	s := m.Shards[0]
	r := nodeClient(t, s.Replica())
	before := snapshot(t, ctx, r)
	if err := s.CutReplica(ctx); err != nil {
		t.Fatalf("CutReplica: %v", err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	after := snapshot(t, ctx, r)
	t.Logf("replica before: %v", before)
	t.Logf("promoted after: %v", after)
	for _, f := range []string{"run_id", "lastsave"} {
		if before[f] != after[f] {
			t.Errorf("%s changed on promotion: %s → %s", f, before[f], after[f])
		}
	}
	if after["master_replid"] == before["master_replid"] || after["master_replid2"] != before["master_replid"] {
		t.Errorf("replication IDs on promotion: %s, %s → %s, %s; want a new one, the old kept as replid2",
			before["master_replid"], before["master_replid2"], after["master_replid"], after["master_replid2"])
	}
	if a, b := atoi(after["cluster_my_epoch"]), atoi(before["cluster_my_epoch"]); a <= b {
		t.Errorf("config epoch on promotion: %s → %s, want larger", before["cluster_my_epoch"], after["cluster_my_epoch"])
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// WAIT is the other way to learn whether a grant reached the replicas: not
// from a script, but after it on the same connection. A replica cut off is
// not counted; a linked one is, at the cost of a round trip to it.
func TestShardWaitFacts(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 1, redislab.WithReplicas())
	ctx := testkit.Context(t, 30*time.Second)
	s := lab.Members[0].Shards[0]
	p := nodeClient(t, s.Primary())
	if err := p.Eval(ctx, "return redis.call('WAIT', 1, 10)", []string{"k"}).Err(); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("WAIT in a script: err = %v, want not allowed", err)
	}
	const n = 200
	cost := func(wait bool) (time.Duration, int64) {
		var acked int64 = n
		start := time.Now()
		for i := range n {
			if err := p.Set(ctx, "k", i, 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			if wait {
				got, err := p.Wait(ctx, 1, 100*time.Millisecond).Result()
				if err != nil {
					t.Fatalf("WAIT: %v", err)
				}
				acked = min(acked, got)
			}
		}
		return time.Since(start) / n, acked
	}
	plain, _ := cost(false)
	waited, acked := cost(true)
	t.Logf("loopback, one replica: SET %v, SET + WAIT 1 %v per call (least acked %d)", plain, waited, acked)
	if acked != 1 {
		t.Errorf("WAIT 1 with the replica linked acknowledged %d, want 1", acked)
	}
	if err := s.CutReplica(ctx); err != nil {
		t.Fatalf("CutReplica: %v", err)
	}
	defer s.Replica().Resume()
	p.Set(ctx, "k", "missed", 0)
	if got, err := p.Wait(ctx, 1, 100*time.Millisecond).Result(); err != nil || got != 0 {
		t.Errorf("WAIT 1 with the replica cut off = %d, %v; want 0", got, err)
	}
}

// snapshot returns what restart detection could read of a node.
func snapshot(t *testing.T, ctx context.Context, c *redis.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"run_id", "uptime_in_seconds", "role", "master_replid", "master_replid2"} {
		out[f] = fact(t, c, f)
	}
	ci, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER INFO: %v", err)
	}
	out["cluster_my_epoch"] = field(ci, "cluster_my_epoch")
	ls, err := c.LastSave(ctx).Result()
	if err != nil {
		t.Fatalf("LASTSAVE: %v", err)
	}
	out["lastsave"] = time.Unix(ls, 0).UTC().Format(time.TimeOnly)
	return out
}

// fact returns one field of the node's INFO.
func fact(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	info, err := c.Info(context.Background()).Result()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	return field(info, name)
}

func field(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
