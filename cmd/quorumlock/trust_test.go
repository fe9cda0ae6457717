package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
