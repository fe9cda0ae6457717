package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// sentinelTTL is the TTL and restart guard of the Sentinel tests: short,
// for the tests wait it out, yet far above a failover's few seconds.
const sentinelTTL = 6 * time.Second

// sentinelMembers starts n Sentinel master sets (a master, one replica,
// one sentinel each) and returns them with a failover client of each.
func sentinelMembers(t *testing.T, n int) ([]*redislab.SentinelSet, []redis.UniversalClient) {
	t.Helper()
	sets := make([]*redislab.SentinelSet, n)
	clients := make([]redis.UniversalClient, n)
	for i := range sets {
		sets[i] = redislab.StartSentinel(t, fmt.Sprintf("set%d", i), 1)
		clients[i] = sets[i].Client(t)
	}
	return sets, clients
}

// readySentinel returns a Client over clients (TTL and restart guard
// sentinelTTL, no renewal) once it is granted a key: every master has been
// up for the guard.
func readySentinel(t *testing.T, ctx context.Context, clients []redis.UniversalClient) *redlock.Client {
	t.Helper()
	c := newClient(t, clients, redlock.WithTTL(sentinelTTL), redlock.WithRestartGuard(sentinelTTL), redlock.WithAutoRenew(false))
	l := eventuallyLocked(t, 3*sentinelTTL, "a key is granted through the failover clients", func() (*redlock.Lock, error) {
		return c.TryLock(ctx, "ready")
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	return c
}

// Issue 25 §2: members that are Sentinel master sets, each given as one
// redis.NewFailoverClient. Lock and Unlock work through them; after a
// clean failover (SENTINEL FAILOVER) in one member, the library's own
// client of that member reaches the promoted master (the failover dialer
// carries over), which sits out the guard and then counts.
func TestSentinelMembersLockAndUnlock(t *testing.T) {
	sets, clients := sentinelMembers(t, 3)
	ctx := ctxFor(t, time.Minute)
	c := readySentinel(t, ctx, clients)
	l, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	for i, s := range sets {
		if n, err := masterOf(t, ctx, s).Exists(ctx, redlock.Keys(redlock.DefaultPrefix, "k").Lock).Result(); err != nil || n != 1 {
			t.Errorf("member %d: the master does not hold k (%d, %v)", i, n, err)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := sets[0].Failover(ctx); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	all := newClient(t, clients[:1], redlock.WithTTL(sentinelTTL), redlock.WithRestartGuard(sentinelTTL))
	l = eventuallyLocked(t, 3*sentinelTTL, "member 0 grants through its promoted master", func() (*redlock.Lock, error) {
		return all.TryLock(ctx, "after")
	})
	if n, err := masterOf(t, ctx, sets[0]).Exists(ctx, redlock.Keys(redlock.DefaultPrefix, "after").Lock).Result(); err != nil || n != 1 {
		t.Errorf("the promoted master does not hold the lock (%d, %v)", n, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the failover: %v", err)
	}
}

// masterOf returns a plain client of s's master as its sentinel names it.
func masterOf(t *testing.T, ctx context.Context, s *redislab.SentinelSet) *redis.Client {
	t.Helper()
	addr, err := s.MasterAddr(ctx)
	if err != nil {
		t.Fatalf("MasterAddr: %v", err)
	}
	m := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { m.Close() })
	return m
}

// Issue 25 §2: a failover inside a Sentinel member promotes a replica
// that missed a grant. In two of three members the replica's link is cut
// (its master refuses it PSYNC, so it cannot catch up) before A locks k;
// SENTINEL FAILOVER then promotes it, and the old master dies. The promoted processes have been up
// for longer than the guard, and their run_ids are new to B: were they
// timed from their start, B would be granted k on them while A holds it.
// They sit out the guard from their promotion (prelude.lua:
// master_served_ms), also once their replication IDs rotate (their
// backlogs freed, with no replica, after repl-backlog-ttl): B is never
// granted k before A's lease ends.
func TestSentinelStaleReplicaPromoted(t *testing.T) {
	sets, clients := sentinelMembers(t, 3)
	ctx := ctxFor(t, 2*time.Minute)
	b := readySentinel(t, ctx, clients)
	for _, s := range sets[:2] {
		cutReplica(t, ctx, s)
	}
	a := newClient(t, clients, redlock.WithTTL(sentinelTTL), redlock.WithRestartGuard(sentinelTTL), redlock.WithAutoRenew(false))
	l, err := a.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("A: TryLock: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range sets[:2] {
		wg.Go(func() { errs[i] = s.Failover(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: Failover: %v", i, err)
		}
		if n, err := masterOf(t, ctx, sets[i]).Exists(ctx, redlock.Keys(redlock.DefaultPrefix, "k").Lock).Result(); err != nil || n != 0 {
			t.Fatalf("member %d: the promoted master holds k (%d, %v): its replica was not cut off", i, n, err)
		}
		// The old master dies (or it would refuse B until its sentinel
		// turns it into a replica, seconds later): B's calls go to the
		// promoted one.
		if err := sets[i].Lab.Nodes[0].Kill(); err != nil {
			t.Fatalf("member %d: Kill: %v", i, err)
		}
	}
	promoted := make([]*redis.Client, 2)
	replids := make([]string, 2)
	for i, s := range sets[:2] {
		promoted[i] = redis.NewClient(&redis.Options{Addr: s.Lab.Nodes[1].Addr()})
		t.Cleanup(func() { promoted[i].Close() })
		replids[i] = replField(t, ctx, promoted[i], "master_replid")
	}
	granted, tries := 0, 0
	for time.Now().Before(l.Until()) {
		tries++
		if tries == 5 {
			// The promoted masters have no replica: once their records
			// are written, they free their backlogs and rotate their
			// replication IDs (second_repl_offset -1) while A holds k.
			for _, p := range promoted {
				if err := p.ConfigSet(ctx, "repl-backlog-ttl", "1").Err(); err != nil {
					t.Fatalf("CONFIG SET repl-backlog-ttl: %v", err)
				}
			}
		}
		r, err := b.TryLock(ctx, "k")
		if err == nil {
			granted++
			_ = r.Unlock(ctx)
		} else if tries == 1 {
			t.Logf("B's first attempt: %v", err)
		}
		time.Sleep(retryEvery)
	}
	t.Logf("B was granted k %d times in %d attempts while A held it", granted, tries)
	for i, p := range promoted {
		if id := replField(t, ctx, p, "master_replid"); id == replids[i] || replField(t, ctx, p, "second_repl_offset") != "-1" {
			t.Errorf("member %d: the promoted master did not rotate its replication ID while A held k (%s)", i, id)
		}
	}
	if granted > 0 {
		t.Fatalf("B was granted k %d times (of %d attempts) while A held it: replicas that missed A's grant were promoted in two of three members", granted, tries)
	}
	r := eventuallyLocked(t, 3*sentinelTTL, "B is granted k once A's lease is over", func() (*redlock.Lock, error) {
		return b.TryLock(ctx, "k")
	})
	_ = r.Unlock(ctx)
}

// cutReplica makes s's replica miss every later write of its master: the
// master refuses it PSYNC and SYNC (ACL), and drops its link. The replica
// stays up and answers its sentinel, so SENTINEL FAILOVER may promote it.
func cutReplica(t *testing.T, ctx context.Context, s *redislab.SentinelSet) {
	t.Helper()
	m := masterOf(t, ctx, s)
	if err := m.Do(ctx, "ACL", "SETUSER", "default", "-psync", "-sync").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	if err := m.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
	r := redis.NewClient(&redis.Options{Addr: s.Lab.Nodes[1].Addr()})
	defer r.Close()
	testkit.Eventually(t, 10*time.Second, "the replica's link is down", func() bool {
		info, err := r.Info(ctx, "replication").Result()
		return err == nil && !strings.Contains(info, "master_link_status:up")
	})
}

// Issue 25 §2: one Sentinel master set given twice (two failover clients
// of it) is one member. New accepts them — every failover client has the
// same placeholder address — and the Client finds them at first contact by
// the master they reach: with the only other member down, no lock is
// granted, and attempts fail with ErrSameCluster naming both.
func TestSentinelSetGivenTwice(t *testing.T) {
	sets, clients := sentinelMembers(t, 1)
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { down.Close() })
	c := newClient(t, []redis.UniversalClient{clients[0], sets[0].Client(t), down}, redlock.WithRestartGuard(0))
	requireSameCluster(t, ctxFor(t, time.Minute), c, "twice")
}

// replField returns field of c's INFO replication.
func replField(t *testing.T, ctx context.Context, c *redis.Client, field string) string {
	t.Helper()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatalf("INFO replication: %v", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO replication has no %s", field)
	return ""
}
