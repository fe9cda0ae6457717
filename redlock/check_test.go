package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// checkOpts are Check's options in tests: a short clock sample, and a node
// timeout that a loaded test machine meets (its p99 PING included).
var checkOpts = []redlock.Option{redlock.WithClockSample(500 * time.Millisecond), redlock.WithNodeTimeout(time.Second)}

// runCheck runs Check on nodes with checkOpts then opts.
func runCheck(t *testing.T, nodes []redis.UniversalClient, opts ...redlock.Option) redlock.Report {
	t.Helper()
	rep, err := redlock.Check(testkit.Context(t, 30*time.Second), nodes, append(append([]redlock.Option{}, checkOpts...), opts...)...)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// finding returns node's finding of check (node -1: the set's), failing t
// when there is none.
func finding(t *testing.T, rep redlock.Report, node int, check string) redlock.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Node == node && f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding for node %d in %+v", check, node, rep.Findings)
	return redlock.Finding{}
}

// wantSeverity fails t unless node's finding of check has severity want
// and its Got mentions got.
func wantSeverity(t *testing.T, rep redlock.Report, node int, check string, want redlock.Severity, got string) {
	t.Helper()
	f := finding(t, rep, node, check)
	if f.Severity != want || !strings.Contains(f.Got, got) || f.Why == "" || f.Want == "" {
		t.Errorf("node %d %s: got %v %q (want %q, why %q), want %v mentioning %q", node, check, f.Severity, f.Got, f.Want, f.Why, want, got)
	}
}

// trustedLab starts n vouched-for masters and returns clients over them.
func trustedLab(t *testing.T, n int) ([]redis.UniversalClient, *redislab.Lab) {
	t.Helper()
	l := redislab.Start(t, n)
	l.Trust(t, redlock.TrustStart)
	return l.Clients(t), l
}

func TestCheckCleanLab(t *testing.T) {
	nodes, _ := trustedLab(t, 3)
	rep := runCheck(t, nodes)
	if rep.Worst() == redlock.SeverityFail || !rep.Majority() || rep.Reachable != 3 {
		t.Fatalf("clean lab: worst %v, reachable %d: %+v", rep.Worst(), rep.Reachable, rep.Findings)
	}
	for i := range nodes {
		// rtt and clock may warn on a loaded machine (a slow PING, a
		// round trip too long to tell the rate); they never fail here.
		for _, c := range []string{"role", "eviction", "persistence", "acl", "start"} {
			if f := finding(t, rep, i, c); f.Severity != redlock.SeverityOK {
				t.Errorf("node %d %s: %v %q: %s", i, c, f.Severity, f.Got, f.Why)
			}
		}
	}
	wantSeverity(t, rep, -1, "members", redlock.SeverityOK, "3 masters")
}

func TestCheckEviction(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			nodes, _ := trustedLab(t, 3)
			ctx := testkit.Context(t, 5*time.Second)
			if err := nodes[1].ConfigSet(ctx, "maxmemory", "100mb").Err(); err != nil {
				t.Fatal(err)
			}
			if err := nodes[1].ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
				t.Fatal(err)
			}
			rep := runCheck(t, nodes, redlock.WithClockSample(0))
			wantSeverity(t, rep, 1, "eviction", redlock.SeverityFail, policy)
			wantSeverity(t, rep, 0, "eviction", redlock.SeverityOK, "noeviction")
		})
	}
}

func TestCheckReplica(t *testing.T) {
	nodes, l := trustedLab(t, 3)
	ctx := testkit.Context(t, 20*time.Second)
	host, port, _ := strings.Cut(l.Nodes[0].Addr(), ":")
	if err := nodes[2].SlaveOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nodes[2].SlaveOf(context.Background(), "NO", "ONE") })
	for nodes[0].InfoMap(ctx, "replication").Item("Replication", "connected_slaves") != "1" {
		if ctx.Err() != nil {
			t.Fatal("node 2 never connected as node 0's replica")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rep := runCheck(t, nodes, redlock.WithClockSample(0))
	wantSeverity(t, rep, 2, "role", redlock.SeverityFail, "role:slave")
	wantSeverity(t, rep, 0, "role", redlock.SeverityWarn, "1 connected replica")
	wantSeverity(t, rep, 1, "role", redlock.SeverityOK, "master")
}

func TestCheckPersistence(t *testing.T) {
	nodes, _ := trustedLab(t, 3)
	ctx := testkit.Context(t, 5*time.Second)
	if err := nodes[0].ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	rep := runCheck(t, nodes, redlock.WithClockSample(0))
	wantSeverity(t, rep, 0, "persistence", redlock.SeverityWarn, "appendonly no")
	if f := finding(t, rep, 0, "persistence"); !strings.Contains(f.Why, "restart guard") {
		t.Errorf("persistence why %q does not name the restart guard", f.Why)
	}
	rep = runCheck(t, nodes, redlock.WithClockSample(0), redlock.WithRestartGuard(0))
	wantSeverity(t, rep, 0, "persistence", redlock.SeverityFail, "appendonly no")
	wantSeverity(t, rep, 1, "persistence", redlock.SeverityOK, "appendfsync always")
}

func TestCheckSameServerTwice(t *testing.T) {
	nodes, l := trustedLab(t, 3)
	_, port, _ := strings.Cut(l.Nodes[0].Addr(), ":")
	alias := redis.NewClient(&redis.Options{Addr: "localhost:" + port})
	t.Cleanup(func() { alias.Close() })
	rep := runCheck(t, append(nodes, alias), redlock.WithClockSample(0))
	wantSeverity(t, rep, 3, "same-server", redlock.SeverityFail, "same server as node 0")
	wantSeverity(t, rep, -1, "members", redlock.SeverityWarn, "4 masters")
}

func TestCheckACL(t *testing.T) {
	nodes, l := trustedLab(t, 3)
	ctx := testkit.Context(t, 5*time.Second)
	err := nodes[1].Do(ctx, "ACL", "SETUSER", "limited", "on", ">pw", "~*", "&*", "+@all", "-evalsha").Err()
	if err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: l.Nodes[1].Addr(), Username: "limited", Password: "pw"})
	t.Cleanup(func() { limited.Close() })
	rep := runCheck(t, []redis.UniversalClient{nodes[0], limited, nodes[2]}, redlock.WithClockSample(0))
	wantSeverity(t, rep, 1, "acl", redlock.SeverityFail, "EVALSHA")
	wantSeverity(t, rep, 0, "acl", redlock.SeverityOK, "every command allowed")
}

func TestCheckACLWithoutDryRun(t *testing.T) {
	nodes, l := trustedLab(t, 3)
	ctx := testkit.Context(t, 5*time.Second)
	err := nodes[1].Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-@admin", "-evalsha").Err()
	if err != nil {
		t.Fatal(err)
	}
	app := redis.NewClient(&redis.Options{Addr: l.Nodes[1].Addr(), Username: "app", Password: "pw"})
	t.Cleanup(func() { app.Close() })
	rep := runCheck(t, []redis.UniversalClient{nodes[0], app, nodes[2]}, redlock.WithClockSample(0))
	wantSeverity(t, rep, 1, "acl", redlock.SeverityFail, "NOPERM")
}

// A Redis Cluster member is checked on its primary; the same cluster given
// again through another address is one server counted twice.
func TestCheckClusterMembers(t *testing.T) {
	l := redislab.StartCluster(t, 3)
	l.Trust(t, redlock.TrustStart)
	nodes := l.ClusterClients(t)
	_, port, _ := strings.Cut(l.Nodes[0].Addr(), ":")
	alias := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"localhost:" + port}})
	t.Cleanup(func() { alias.Close() })
	rep := runCheck(t, append(nodes, alias), redlock.WithClockSample(0))
	for _, c := range []string{"role", "eviction", "persistence", "acl", "start"} {
		if f := finding(t, rep, 1, c); f.Severity != redlock.SeverityOK || !strings.Contains(f.Addr, " primary ") {
			t.Errorf("cluster node 1 %s: %v %q at %q: %s", c, f.Severity, f.Got, f.Addr, f.Why)
		}
	}
	wantSeverity(t, rep, 3, "same-server", redlock.SeverityFail, "same server as node 0")
}
