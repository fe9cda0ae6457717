package redlocktest_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock/redlocktest"
)

// Nothing is installed: with no redis-server to be found, a Cluster starts
// and grants locks.
func TestStartNeedsNoServer(t *testing.T) {
	t.Setenv("PATH", "")
	if path, err := exec.LookPath("redis-server"); err == nil {
		t.Fatalf("redis-server still found at %s", path)
	}
	masters := redlocktest.Start(t, 5)
	ctx := ctxFor(t, 10*time.Second)
	l, err := masters.Client(t).TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock = %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
}

// A new Cluster's masters are vouched for, as a new deployment's are: they
// count at once, whatever the restart guard.
func TestNewMastersCountAtOnce(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 5)
	ctx := ctxFor(t, 10*time.Second)
	if _, err := masters.Client(t).TryLock(ctx, "job"); err != nil {
		t.Fatalf("TryLock on new masters = %v; want granted at once", err)
	}
}

// Each master reports a process of its own, as redis-server does: a
// run_id, an uptime and a role (INFO, ROLE), read from a script as from a
// command.
func TestMastersReportTheirProcess(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	seen := map[string]bool{}
	for i, node := range masters.Clients() {
		info, err := node.InfoMap(ctx, "server", "replication").Result()
		if err != nil {
			t.Fatalf("master %d: INFO = %v", i, err)
		}
		runID, role := info["Server"]["run_id"], info["Replication"]["role"]
		if len(runID) != 40 || seen[runID] || role != "master" || info["Server"]["uptime_in_seconds"] == "" {
			t.Errorf("master %d: run_id %q (seen: %v), role %q, uptime %q; want a new 40-digit run_id, master, an uptime",
				i, runID, seen[runID], role, info["Server"]["uptime_in_seconds"])
		}
		seen[runID] = true
		if role, err := node.Do(ctx, "ROLE").Slice(); err != nil || len(role) != 3 || role[0] != "master" {
			t.Errorf("master %d: ROLE = %v, %v; want [master 0 []]", i, role, err)
		}
		fromScript, err := node.Eval(ctx, "return {redis.call('INFO', 'server'), redis.call('LASTSAVE'), redis.call('TIME')[1]}", nil).Slice()
		if err != nil {
			t.Fatalf("master %d: script = %v", i, err)
		}
		if s, _ := fromScript[0].(string); !strings.Contains(s, "run_id:"+runID) {
			t.Errorf("master %d: INFO from a script = %q; want run_id %s", i, s, runID)
		}
		saved, _ := fromScript[1].(int64)
		now, _ := strconv.ParseInt(fromScript[2].(string), 10, 64)
		if saved > now || now-saved > 60 {
			t.Errorf("master %d: LASTSAVE %d, TIME %d from a script; want LASTSAVE at the start, just before", i, saved, now)
		}
	}
}

// INFO and LASTSAVE inside MULTI are left to miniredis: the transaction's
// replies stay in step with its commands.
func TestInfoInsideMultiKeepsTheProtocol(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 1)
	ctx := ctxFor(t, 10*time.Second)
	node := masters.Clients()[0]
	var get *redis.StringCmd
	node.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		p.Info(ctx, "server")
		get = p.Get(ctx, "k")
		return nil
	})
	if get.Val() != "v" {
		t.Fatalf("GET after INFO in MULTI = %q, %v; want v", get.Val(), get.Err())
	}
	if err := node.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the transaction = %v", err)
	}
	if _, err := node.Info(ctx, "server").Result(); err != nil {
		t.Fatalf("INFO after the transaction = %v", err)
	}
}

// Bad input is refused with one line starting with "redlocktest:", and
// changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	if _, err := redlocktest.New(0); err == nil || !strings.HasPrefix(err.Error(), "redlocktest: ") {
		t.Errorf("New(0) = %v; want a redlocktest: error", err)
	}
	masters, err := redlocktest.New(2)
	if err != nil {
		t.Fatal(err)
	}
	masters.Kill(2)
	masters.Freeze(-1)
	masters.SetLatency(0, -time.Second)
	ctx := ctxFor(t, 10*time.Second)
	for i, node := range masters.Clients() {
		if err := node.Ping(ctx).Err(); err != nil {
			t.Errorf("master %d after bad calls: PING = %v", i, err)
		}
	}
	err = masters.Close()
	for _, want := range []string{"Kill(2): no master 2", "Freeze(-1): no master -1", "SetLatency(0, -1s): negative latency"} {
		if err == nil || !strings.Contains(err.Error(), "redlocktest: "+want) {
			t.Errorf("Close = %v; want it to report %q", err, want)
		}
	}
	masters.Restart(0) // after Close: nothing comes back
	if c := direct(t, masters.Addrs()[0]); c.Ping(ctx).Err() == nil {
		t.Error("a master answers after Close and Restart")
	}
}

// BenchmarkStart5 times the start of five masters, vouched for, and their
// stop.
func BenchmarkStart5(b *testing.B) {
	for b.Loop() {
		masters, err := redlocktest.New(5)
		if err != nil {
			b.Fatal(err)
		}
		masters.Close()
	}
}

// BenchmarkLockUnlock times one uncontended TryLock and Unlock on five
// masters: the cost of the fake in a user's test.
func BenchmarkLockUnlock(b *testing.B) {
	masters := redlocktest.Start(b, 5)
	locks := masters.Client(b)
	ctx := ctxFor(b, time.Minute)
	for b.Loop() {
		l, err := locks.TryLock(ctx, "job")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
