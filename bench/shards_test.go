package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// BenchmarkShardedMembers compares a lock cycle (TryLock, Unlock) on three
// single masters with one on three members of three shards each (issue
// 20), keys spread over every slot, with restart detection off ("off") and
// at its default, every primary vouched for ("guard": on a cluster member
// each script then also reads its slot's owner record). Besides ns/op it
// reports the scripts each cycle runs and their server time, summed over
// every server, and logs the per-shard split: on one machine the shards
// share its cores, so ns/op says little about real hardware, while server
// time per lock and its spread over shards say how far a member of k
// shards scales on k machines.
func BenchmarkShardedMembers(b *testing.B) {
	for _, detect := range []string{"off", "guard"} {
		b.Run("single3/"+detect, func(b *testing.B) {
			lab := redislab.Start(b, 3, redislab.WithArgs("--appendfsync", *flagFsync))
			nodes := lab.Clients(b)
			stats := func() [][]redislab.ScriptStat { return singleStats(b, nodes) }
			benchShardCycle(b, nodes, detect, stats)
		})
		b.Run("sharded3x3/"+detect, func(b *testing.B) {
			lab := redislab.StartShards(b, 3, 3, redislab.WithArgs("--appendfsync", *flagFsync))
			benchShardCycle(b, lab.ClusterClients(b), detect, func() [][]redislab.ScriptStat { return lab.ScriptStats(b) })
		})
	}
}

// benchShardCycle runs b.N cycles in parallel over nodes and reports the
// scripts and server time per cycle that stats (per member, per shard)
// counted. detect "off" turns restart detection off; else every node is
// vouched for and the default guard applies.
func benchShardCycle(b *testing.B, nodes []redis.UniversalClient, detect string, stats func() [][]redislab.ScriptStat) {
	opts := []redlock.Option{redlock.WithAutoRenew(false), redlock.WithNodeTimeout(time.Second)}
	if detect == "off" {
		opts = append(opts, redlock.WithRestartGuard(0))
	} else {
		for _, n := range nodes {
			if err := redlock.TrustStart(context.Background(), n); err != nil {
				b.Fatal(err)
			}
		}
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	before := stats()
	var fails failures
	var workers atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx, w := context.Background(), workers.Add(1)
		for i := 0; pb.Next(); i++ {
			key := fmt.Sprintf("shard:%d:%d", w, i%1024)
			l, err := c.TryLock(ctx, key)
			if err == nil {
				err = l.Unlock(ctx)
			}
			fails.add(err)
		}
	})
	b.StopTimer()
	after := stats()
	var calls int64
	var spent time.Duration
	var split []string
	for i := range after {
		for j := range after[i] {
			d := after[i][j].Sub(before[i][j])
			calls, spent = calls+d.Calls, spent+d.Time
			split = append(split, fmt.Sprintf("m%d/s%d %d", i, j, d.Calls))
		}
	}
	b.ReportMetric(float64(calls)/float64(b.N), "scripts/op")
	b.ReportMetric(float64(spent.Microseconds())/float64(b.N), "server-µs/op")
	b.Logf("N=%d, script calls per member/shard: %v", b.N, split)
	fails.report(b)
}

// singleStats reads the script stats of single masters, one shard each.
func singleStats(b *testing.B, nodes []redis.UniversalClient) [][]redislab.ScriptStat {
	out := make([][]redislab.ScriptStat, len(nodes))
	for i, n := range nodes {
		var st redislab.ScriptStat
		for _, cmd := range []string{"evalsha", "eval"} {
			calls, usec := commandStat(b, context.Background(), n, cmd)
			st.Calls += calls
			st.Time += time.Duration(usec) * time.Microsecond
		}
		out[i] = []redislab.ScriptStat{st}
	}
	return out
}
