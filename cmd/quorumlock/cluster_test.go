package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// trust given one node of a Redis Cluster (issue 20) vouches for every
// primary of that cluster, one line each, and for no replica; a Client
// whose restart guard is far longer than the cluster's uptime then counts
// a key of every shard at once.
func TestTrustClusterNode(t *testing.T) {
	lab := redislab.StartShards(t, 1, 3, redislab.WithReplicas())
	m := lab.Members[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, stdout, stderr := inProcess("trust", "--nodes", m.Shards[1].Primary().Addr())
	t.Logf("trust:\n%s%s", stdout, stderr)
	if code != exitOK {
		t.Fatalf("trust on a cluster node: status %d, want %d", code, exitOK)
	}
	for i, s := range m.Shards {
		runID := runIDOf(t, ctx, s.Primary().Addr())
		if want := "primary " + s.Primary().Addr() + "\tvouched for run_id " + runID; !strings.Contains(stdout, want) {
			t.Errorf("shard %d: trust's output lacks %q", i, want)
		}
		if r := s.Replica().Addr(); strings.Contains(stdout, r) {
			t.Errorf("shard %d: trust's output names the replica %s", i, r)
		}
	}
	c := testkit.Open(t, redlock.New, lab.ClusterClients(t), redlock.WithNodeTimeout(testkit.NodeTimeout), redlock.WithRestartGuard(time.Hour))
	for i, s := range m.Shards {
		l, err := tryLockPast(ctx, c, s.Keys("vouched", 1)[0])
		if err != nil {
			t.Errorf("shard %d: TryLock after trust on one node: %v", i, err)
			continue
		}
		l.Unlock(ctx)
	}
}

// status given one node of a Redis Cluster reads the key where it lives —
// on the primary of its slot, whichever node was given — and that
// primary's start and vouch (its slot's record, after trust).
func TestStatusClusterNode(t *testing.T) {
	lab := redislab.StartShards(t, 1, 3)
	m := lab.Members[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testkit.Open(t, redlock.New, lab.ClusterClients(t), redlock.WithNodeTimeout(testkit.NodeTimeout), redlock.WithRestartGuard(0))
	key := m.Shards[2].Keys("report", 1)[0]
	l, err := tryLockPast(ctx, c, key, redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer l.Unlock(ctx)
	given, owner := m.Shards[0].Primary().Addr(), m.Shards[2].Primary().Addr()
	if code, _, stderr := inProcess("trust", "--force", "--nodes", given); code != exitOK {
		t.Fatalf("trust: status %d: %s", code, stderr)
	}
	code, stdout, stderr := inProcess("status", "--nodes", given, "--key", key)
	t.Logf("status:\n%s%s", stdout, stderr)
	if code != exitOK {
		t.Fatalf("status on a cluster node: status %d, want %d", code, exitOK)
	}
	for _, want := range []string{given + " (cluster primary " + owner + ")", "held", "vouched"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status's output lacks %q", want)
		}
	}
}

// tryLockPast is c.TryLock retried, for up to 10 s, while it fails for a
// node timeout only: on a busy host the first calls to a cluster (dials,
// slot maps) may miss the tests' short node timeout. Any other failure —
// a restart guard's refusal — is returned at once.
func tryLockPast(ctx context.Context, c *redlock.Client, key string, opts ...redlock.Option) (*redlock.Lock, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := c.TryLock(ctx, key, opts...)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			return l, err
		}
	}
}

func runIDOf(t *testing.T, ctx context.Context, addr string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	id := rdb.InfoMap(ctx, "server").Item("Server", "run_id")
	if id == "" {
		t.Fatalf("%s: no run_id", addr)
	}
	return id
}

// run given one node of each of three Redis Clusters locks through each
// whole cluster: the key lives on another shard than the node given, and
// the command runs under the lock (before: MOVED from every member, the
// lock not obtained).
func TestRunClusterNodes(t *testing.T) {
	lab := redislab.StartShards(t, 3, 3)
	var given []string
	for _, m := range lab.Members {
		given = append(given, m.Shards[1].Primary().Addr())
	}
	key := lab.Members[0].Shards[0].Keys("run", 1)[0]
	code, stdout, stderr := runBinary(t, "", runArgs(strings.Join(given, ","), key, "--restart-guard", "0s", "--", "echo", "ran")...)
	t.Logf("run:\n%s%s", stdout, stderr)
	if code != exitOK || !strings.Contains(stdout, "ran") {
		t.Fatalf("run on one node of each cluster: status %d, output %q; want %d and the command's output", code, stdout, exitOK)
	}
}

// trust's --timeout bounds each call to a node, not the whole vouch: a
// cluster primary writes a record per slot it serves, in many pipelines,
// and the whole takes longer with more slots and on a busy host. Here a
// node 300ms away (each request delayed) needs five round trips or more
// (INFO, the SET pipeline, GET, INFO): more than the 1s --timeout in all,
// each call well within it.
func TestTrustTimeoutBoundsEachCall(t *testing.T) {
	lab := redislab.Start(t, 1)
	proxy := faultproxy.Start(t, lab.Nodes[0].Addr())
	proxy.SetLatency(300*time.Millisecond, 0)
	code, stdout, stderr := inProcess("trust", "--timeout", "1s", "--nodes", proxy.Addr())
	t.Logf("trust:\n%s%s", stdout, stderr)
	if code != exitOK {
		t.Fatalf("trust on a node 300ms away, --timeout 1s: status %d, want %d", code, exitOK)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: lab.Nodes[0].Addr()})
	defer rdb.Close()
	if got, want := rdb.Get(ctx, redlock.TrustKey).Val(), runIDOf(t, ctx, lab.Nodes[0].Addr()); got != want {
		t.Errorf("%s = %q, want the run_id %q", redlock.TrustKey, got, want)
	}
}
