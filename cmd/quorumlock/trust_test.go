package main

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Masters just started are not counted for the restart guard; trust vouches
// for their processes, and a Client meeting them afterwards locks at once.
func TestTrustVouchesForNewMasters(t *testing.T) {
	lab := redislab.Start(t, 3) // not vouched for, unlike startLab's
	lab.RequireControl(t)       // processes that just started
	nodes := strings.Join(lab.Addrs(), ",")
	clients := lab.Clients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	before := testkit.Open(t, redlock.New, clients, redlock.WithNodeTimeout(testkit.NodeTimeout))
	if l, err := before.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNodeRestarted) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryLock on masters up for less than the guard = %v, want ErrNodeRestarted", err)
	}

	code, stdout, stderr := inProcess("trust", "--nodes", nodes)
	if code != exitOK {
		t.Fatalf("trust: status %d; stderr:\n%s", code, stderr)
	}
	for i, rdb := range clients {
		runID := rdb.InfoMap(ctx, "server").Item("Server", "run_id")
		if got := rdb.Get(ctx, redlock.TrustKey).Val(); runID == "" || got != runID {
			t.Errorf("node %d: %s = %q, want its run_id %q", i, redlock.TrustKey, got, runID)
		}
		if want := lab.Nodes[i].Addr() + "\tvouched for run_id " + runID; !strings.Contains(stdout, want) {
			t.Errorf("trust's output lacks %q:\n%s", want, stdout)
		}
	}
	after := testkit.Open(t, redlock.New, clients, redlock.WithNodeTimeout(testkit.NodeTimeout))
	l, err := after.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock by a Client meeting the vouched masters: %v", err)
	}
	l.Unlock(ctx)
}

// A node that cannot be vouched for is named, the others are vouched for,
// and trust exits 69; bad invocations exit 2 and touch no node.
func TestTrustReportsEachNode(t *testing.T) {
	lab := redislab.Start(t, 3)
	lab.RequireControl(t)
	lab.Kill(t, 1)
	code, stdout, stderr := inProcess("trust", "--nodes", strings.Join(lab.Addrs(), ","), "--timeout", "500ms")
	if code != exitUnavailable || !strings.Contains(stderr, "1 of 3 nodes not vouched for") {
		t.Errorf("trust with a node down: status %d, stderr %q; want %d and \"1 of 3 nodes not vouched for\"", code, stderr, exitUnavailable)
	}
	if !strings.Contains(stdout, lab.Nodes[1].Addr()+"\tnot vouched: ") {
		t.Errorf("trust's output does not name the dead node %s:\n%s", lab.Nodes[1].Addr(), stdout)
	}
	ctx, clients := context.Background(), lab.Clients(t)
	for _, i := range []int{0, 2} {
		if clients[i].Get(ctx, redlock.TrustKey).Val() == "" {
			t.Errorf("node %d, alive, not vouched for", i)
		}
	}

	live := lab.Nodes[0].Addr()
	clients[0].Del(ctx, redlock.TrustKey)
	for _, args := range [][]string{
		{"trust"}, // no nodes
		{"trust", "--nodes", live, "extra"},
		{"trust", "--nodes", live, "--timeout", "0s"},
		{"trust", "--nodes", live, "--key", "k"},
	} {
		if code, _, stderr := inProcess(args...); code != exitUsage || !strings.Contains(stderr, "quorumlock trust: ") {
			t.Errorf("%q: status %d, stderr %q; want %d with a message", args, code, stderr, exitUsage)
		}
	}
	if clients[0].Exists(ctx, redlock.TrustKey).Val() != 0 {
		t.Error("a refused trust invocation vouched for a node")
	}
}

// After a crash, trust must not re-admit masters that lost leases: a lock
// is held on five masters up for a while, three are killed and restart
// empty. trust refuses (status 1), vouching for none, and names why — the
// survivors' live lock; once the lock is gone, the survivors being far
// older than the restarted masters still refuses. --force vouches with a
// warning.
func TestTrustRefusesMastersInUse(t *testing.T) {
	lab := redislab.Start(t, 5)
	lab.RequireControl(t)
	addrs, nodes := lab.Addrs(), strings.Join(lab.Addrs(), ",")
	if code, _, stderr := inProcess("trust", "--nodes", nodes); code != exitOK {
		t.Fatalf("trust of new masters: status %d; stderr:\n%s", code, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder := testkit.Open(t, redlock.New, lab.Clients(t, func(o *redis.Options) { o.MaxRetries, o.DialerRetries = -1, 1 }),
		redlock.WithNodeTimeout(testkit.NodeTimeout), redlock.WithTTL(30*time.Second), redlock.WithAutoRenew(false))
	held, err := holder.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	first := lab.Clients(t)[0]
	testkit.Eventually(t, 3*redlock.NewSpread, "the masters up for longer than NewSpread", func() bool {
		up, _ := strconv.Atoi(first.InfoMap(ctx, "server").Item("Server", "uptime_in_seconds"))
		return time.Duration(up)*time.Second > redlock.NewSpread+time.Second
	})
	lab.Restart(t, true, 2, 3, 4)

	code, stdout, stderr := inProcess("trust", "--nodes", nodes)
	if code != exitInUse || !strings.Contains(stderr, "nothing vouched for") || !strings.Contains(stderr, "--force") {
		t.Fatalf("trust after a crash: status %d, stderr %q; want %d, nothing vouched for, and how to override", code, stderr, exitInUse)
	}
	for _, i := range []int{2, 3, 4} {
		if want := addrs[i] + "\trefused: "; !strings.Contains(stdout, want) || !strings.Contains(stdout, "live lock") {
			t.Errorf("trust's output lacks %q naming a live lock:\n%s", want, stdout)
		}
	}
	clients := lab.Clients(t)
	for _, i := range []int{2, 3, 4} {
		if clients[i].Exists(ctx, redlock.TrustKey).Val() != 0 {
			t.Errorf("node %d, restarted empty, was vouched for", i)
		}
	}
	second := testkit.Open(t, redlock.New, clients, redlock.WithNodeTimeout(testkit.NodeTimeout))
	if l, err := second.TryLock(ctx, "job"); err == nil {
		t.Fatalf("a second holder got the key (token %d) while the first holds it (token %d)", l.Token(), held.Token())
	}

	// No lock left, but the survivors were up long before the restarted.
	if err := held.Unlock(ctx); err != nil && !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Unlock: %v", err)
	}
	code, stdout, _ = inProcess("trust", "--nodes", nodes)
	if code != exitInUse || !strings.Contains(stdout, addrs[2]+"\trefused: "+addrs[0]+" has been up") {
		t.Fatalf("trust with masters far older than the restarted: status %d; want %d naming %s's uptime:\n%s", code, exitInUse, addrs[0], stdout)
	}

	code, stdout, stderr = inProcess("trust", "--force", "--nodes", nodes)
	if code != exitOK || !strings.Contains(stderr, "warning: --force: vouching for "+addrs[2]) {
		t.Fatalf("trust --force: status %d, stderr %q; want 0 and a warning naming %s", code, stderr, addrs[2])
	}
	for i, rdb := range clients {
		if runID := rdb.InfoMap(ctx, "server").Item("Server", "run_id"); rdb.Get(ctx, redlock.TrustKey).Val() != runID {
			t.Errorf("node %d not vouched for after --force:\n%s", i, stdout)
		}
	}
}

// A writable replica (replica-read-only no) would take the vouch, and its
// grants would then count as a master's: trust refuses it (status 69).
func TestTrustRefusesWritableReplica(t *testing.T) {
	lab := redislab.Start(t, 2)
	lab.RequireControl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clients := lab.Clients(t)
	replica := clients[1]
	host, port, _ := net.SplitHostPort(lab.Nodes[0].Addr())
	if err := replica.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "the replica's link up", func() bool {
		return strings.Contains(replica.Info(ctx, "replication").Val(), "master_link_status:up")
	})
	if err := replica.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatalf("CONFIG SET replica-read-only no: %v", err)
	}
	code, stdout, stderr := inProcess("trust", "--nodes", lab.Nodes[1].Addr())
	if code != exitUnavailable || !strings.Contains(stdout, lab.Nodes[1].Addr()+"\tnot vouched: ") || !strings.Contains(stdout, "replica") {
		t.Fatalf("trust of a writable replica: status %d, stdout %q, stderr %q; want %d naming it a replica", code, stdout, stderr, exitUnavailable)
	}
	if runID := replica.InfoMap(ctx, "server").Item("Server", "run_id"); replica.Get(ctx, redlock.TrustKey).Val() == runID {
		t.Error("the replica was vouched for")
	}
}
