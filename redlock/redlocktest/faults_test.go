package redlocktest_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/redlocktest"
)

// A killed master refuses connections and the lock goes on with the rest;
// with a majority killed, no lock is granted.
func TestKillRefusesConnections(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 5)
	locks := masters.Client(t)
	ctx := ctxFor(t, 20*time.Second)
	masters.Kill(0)
	if c, err := net.Dial("tcp", masters.Addrs()[0]); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial a killed master = %v; want connection refused", err)
	}
	l, err := locks.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock with one master killed = %v", err)
	}
	l.Unlock(ctx)
	masters.Kill(1)
	masters.Kill(2)
	// Another key: "job" may still be held on the master whose acquire
	// call answered after Unlock (its late release is asynchronous), and
	// that refusal would decide the round before every killed master's
	// failure is in.
	_, err = locks.TryLock(ctx, "other job")
	for i, e := range votes(t, err)[:3] {
		if e == nil {
			t.Errorf("killed master %d voted without an error", i)
		}
	}
}

// A restarted master is a new, empty process: a new run_id, an uptime from
// zero, no keys.
func TestRestartIsANewEmptyProcess(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 1)
	ctx := ctxFor(t, 20*time.Second)
	node := masters.Clients()[0]
	before := node.InfoMap(ctx, "server").Val()["Server"]["run_id"]
	node.Set(ctx, "k", "v", 0)
	masters.Restart(0)
	var info map[string]map[string]string
	eventually(t, 5*time.Second, "the restarted master answers", func() bool {
		var err error
		info, err = node.InfoMap(ctx, "server").Result()
		return err == nil
	})
	if after := info["Server"]["run_id"]; after == before || len(after) != 40 {
		t.Errorf("run_id %q after restart, %q before; want a new one", after, before)
	}
	if up := info["Server"]["uptime_in_seconds"]; up != "0" {
		t.Errorf("uptime_in_seconds = %s just after a restart; want 0", up)
	}
	if n, err := node.DBSize(ctx).Result(); n != 0 || err != nil {
		t.Errorf("DBSIZE after restart = %d, %v; want 0 keys", n, err)
	}
}

// A restarted master sits out the restart guard, as a real one does: a
// holder's lease, lost by a majority restarted empty, is not granted to
// another while it lives — and is once the guard has passed.
func TestRestartSitsOutTheGuard(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	masters := redlocktest.Start(t, 5)
	holder := masters.Client(t, redlock.WithTTL(ttl), redlock.WithAutoRenew(false))
	other := masters.Client(t, redlock.WithTTL(ttl))
	ctx := ctxFor(t, 20*time.Second)
	// The other process has met every master before the restarts (tried
	// again while a loaded machine times its first calls out).
	eventually(t, 10*time.Second, "other's first TryLock and Unlock", func() bool {
		l, err := other.TryLock(ctx, "job")
		return err == nil && l.Unlock(ctx) == nil
	})
	held, err := holder.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("holder's TryLock = %v", err)
	}
	for i := range 3 {
		masters.Restart(i)
	}
	for time.Now().Before(held.Until()) {
		l, err := other.TryLock(ctx, "job")
		if err == nil {
			t.Fatalf("granted with token %d, %v before the holder's lease ends", l.Token(), time.Until(held.Until()))
		}
		for i, e := range votes(t, err)[:3] {
			if e != nil && !errors.Is(e, redlock.ErrNodeRestarted) {
				t.Fatalf("vote of restarted master %d = %v; want ErrNodeRestarted", i, e)
			}
		}
	}
	l, err := other.Lock(ctx, "job")
	if err != nil {
		t.Fatalf("Lock once the guard passed = %v", err)
	}
	if l.Token() <= held.Token() {
		t.Errorf("token %d after the restarts, %d before; want larger", l.Token(), held.Token())
	}
}

// A frozen master answers nothing — calls end with their context — and
// processes what it was sent once thawed; the lock goes on with the rest
// meanwhile.
func TestFreezeTimesOutAndThawResumes(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 5)
	locks := masters.Client(t)
	ctx := ctxFor(t, 20*time.Second)
	node := masters.Clients()[0]
	node.Ping(ctx)
	masters.Freeze(0)
	short := ctxFor(t, 200*time.Millisecond)
	asked := time.Now()
	if err := node.Set(short, "sent", "while frozen", 0).Err(); !errors.Is(err, context.DeadlineExceeded) || time.Since(asked) > time.Second {
		t.Fatalf("SET on a frozen master = %v after %v; want the context's timeout", err, time.Since(asked))
	}
	l, err := locks.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock with one master frozen = %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with one master frozen = %v", err)
	}
	masters.Thaw(0)
	eventually(t, 5*time.Second, "the SET sent while frozen is applied after Thaw", func() bool {
		return masters.Clients()[0].Get(ctx, "sent").Val() == "while frozen"
	})
}

// Every reply of a slowed master comes late; an acquisition does not wait
// for it: the other four decide.
func TestSlowMasterIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	const latency = time.Second
	masters := redlocktest.Start(t, 5)
	locks := masters.Client(t)
	ctx := ctxFor(t, 20*time.Second)
	masters.Clients()[0].Ping(ctx) // the slow master's connection is pooled
	masters.SetLatency(0, latency)
	asked := time.Now()
	l, err := locks.TryLock(ctx, "job")
	if took := time.Since(asked); err != nil || took >= latency/2 {
		t.Fatalf("TryLock with one master slowed by %v = %v after %v; want granted by the others, sooner", latency, err, took)
	}
	l.Unlock(ctx)
	asked = time.Now()
	if err := masters.Clients()[0].Ping(ctx).Err(); err != nil || time.Since(asked) < latency {
		t.Errorf("PING of the slowed master = %v after %v; want its reply after %v", err, time.Since(asked), latency)
	}
	masters.SetLatency(0, 0)
	if err := masters.Clients()[0].Ping(ctx).Err(); err != nil {
		t.Errorf("PING after the latency is removed = %v", err)
	}
}
