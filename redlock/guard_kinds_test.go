package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// cutOffFrom returns clients of l's masters that reach every master but
// cut, whose client goes through a proxy refusing every connection: a
// holder that never writes there.
func cutOffFrom(t *testing.T, l *redislab.Lab, cut int) []redis.UniversalClient {
	t.Helper()
	nodes := l.Clients(t, failFast)
	p := faultproxy.Start(t, l.Nodes[cut].Addr())
	p.SetRefuse(true)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	nodes[cut] = rdb
	return nodes
}

// A guarded kind of hold: how the holders H1 (cut off from master 2) and
// H2 (cut off from master 1) take it before master 0 restarts empty, and
// how the fresh client X then tries it. A nil hold is not taken.
type guardedKind struct {
	h1, h2 func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)
	x      func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)
}

func lockKeys(keys ...string) func(context.Context, *redlock.Client) (*redlock.Lock, error) {
	return func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.TryLockMany(ctx, keys) }
}

func readKey(key string) func(context.Context, *redlock.Client) (*redlock.Lock, error) {
	return func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(ctx, key) }
}

func permitOf(name string, limit int) func(context.Context, *redlock.Client) (*redlock.Lock, error) {
	return func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
		return c.TryAcquire(ctx, name, limit)
	}
}

// guardedKinds are the scenario of issue 25 for every kind of hold: each
// holder holds on master 0 and one other, master 0 forgets both, and X's
// attempt is granted by master 0 and — for all but the writer's key held
// by H1 — by a master that holds a long lease of H1 or H2 on the same
// key, name or set.
var guardedKinds = map[string]guardedKind{
	"writer":      {h1: lockKeys("w"), x: lockKeys("w")},
	"reader":      {h1: lockKeys("r"), x: readKey("r")},
	"under reads": {h1: readKey("u"), h2: readKey("u"), x: lockKeys("u")},
	"several":     {h1: lockKeys("m1", "m2"), h2: lockKeys("m3"), x: lockKeys("m2", "m4")},
	"permit":      {h1: permitOf("sem", 2), h2: permitOf("sem", 2), x: permitOf("sem", 2)},
}

// Issue 25: three masters; H1 holds on masters {0, 1}, H2 on {0, 2}, each
// with a long TTL; master 0 restarts empty. X, a fresh Client with a TTL
// of 1 s, tries every kind of hold again and again while they are valid.
// Master 0, up for X's TTL but not for H1's and H2's, must never count:
// the guard records of masters 1 and 2 must cover every lease they hold
// on the key — for a semaphore every permit, not only the one they grant
// X. Before the fix, X held permit 1 of a two-permit semaphore beside H1
// and H2 about a second after the restart.
func TestGuardCoversEveryLeaseOfAnsweringNode(t *testing.T) {
	const long, short, tries = 10 * time.Second, time.Second, 5 * time.Second
	l := safetyLab(t, 3)
	ctx := ctxFor(t, 60*time.Second)
	opts := []redlock.Option{redlock.WithTTL(long), redlock.WithAutoRenew(false)}
	h1 := newClient(t, cutOffFrom(t, l, 2), opts...)
	h2 := newClient(t, cutOffFrom(t, l, 1), opts...)
	held := map[string][]*redlock.Lock{}
	for what, k := range guardedKinds {
		for i, h := range []struct {
			c    *redlock.Client
			take func(context.Context, *redlock.Client) (*redlock.Lock, error)
		}{{h1, k.h1}, {h2, k.h2}} {
			if h.take == nil {
				continue
			}
			// H2's permit: the one master 0 has free, granted by master 2
			// too once an attempt prefers it.
			lk := eventuallyLocked(t, 5*time.Second, fmt.Sprintf("%s: H%d holds", what, i+1), func() (*redlock.Lock, error) {
				return h.take(ctx, h.c)
			})
			held[what] = append(held[what], lk)
		}
	}
	if p := held["permit"]; p[0].Permit() == p[1].Permit() {
		t.Fatalf("H1 and H2 both hold permit %d", p[0].Permit())
	}
	l.Restart(t, true, 0)
	restarted := time.Now()

	x := newClient(t, l.Clients(t), redlock.WithTTL(short))
	overlaps := map[string]int{}
	attempts := 0
	for time.Since(restarted) < tries {
		for what, k := range guardedKinds {
			got, err := k.x(ctx, x)
			if err != nil {
				continue
			}
			if valid(held[what]) {
				overlaps[what]++
				t.Errorf("%s: X granted %v (permit %d) %v after master 0 restarted, while H1 and H2 hold",
					what, got.Keys(), got.Permit(), time.Since(restarted).Round(time.Millisecond))
			}
			got.Unlock(ctx)
		}
		attempts++
		time.Sleep(retryEvery)
	}
	t.Logf("%d rounds of attempts over %v after the restart; overlaps per kind: %v", attempts, tries, overlaps)
	if attempts < 10 {
		t.Fatalf("X made %d rounds of attempts: the test proved nothing", attempts)
	}
}

// valid reports whether every lock of hs is still held and within its
// validity.
func valid(hs []*redlock.Lock) bool {
	for _, h := range hs {
		if h.Err() != nil || !time.Now().Before(h.Until()) {
			return false
		}
	}
	return true
}
