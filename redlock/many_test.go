package redlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestLockManyRefusesBadKeysAndSendsNothing(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	long := strings.Repeat("k", redlock.MaxKeyLen+1)
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"nil", nil},
		{"none", []string{}},
		{"empty key", []string{"a", ""}},
		{"duplicate", []string{"a", "b", "a"}},
		{"too long", []string{"a", long}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, call := range map[string]func(context.Context, []string, ...redlock.Option) (*redlock.Lock, error){
				"LockMany": c.LockMany, "TryLockMany": c.TryLockMany,
			} {
				if l, err := call(ctx, tc.keys); !errors.Is(err, redlock.ErrInvalid) || l != nil {
					t.Errorf("%s(%q) = %v, %v; want nil, ErrInvalid", name, tc.keys, l, err)
				}
			}
		})
	}
	for i, n := range nodes {
		if keys, err := n.Keys(ctx, redlock.DefaultPrefix+"{*").Result(); err != nil || len(keys) > 0 {
			t.Errorf("node %d: keys %v (err %v), want none written", i, keys, err)
		}
	}
}

func TestLockManyHoldsEveryKeyAsOne(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLockMany(ctx, []string{"b", "a", "c"}, redlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("TryLockMany: %v", err)
	}
	if got, want := l.Keys(), []string{"b", "a", "c"}; !slices.Equal(got, want) || l.Key() != "b,a,c" {
		t.Errorf("Keys() = %q, Key() = %q; want %q and \"b,a,c\"", got, l.Key(), want)
	}
	largest := int64(0)
	for _, k := range l.Keys() {
		// TryLockMany returns once a majority granted: the other nodes'
		// grants may still be on their way.
		eventually(t, 5*time.Second, "key "+k+" held on all 5 nodes", func() bool { return countHeld(t, nodes, k) == 5 })
		if l.TokenOf(k) <= 0 {
			t.Errorf("TokenOf(%s) = %d, want > 0", k, l.TokenOf(k))
		}
		largest = max(largest, l.TokenOf(k))
	}
	if l.Token() != largest || l.TokenOf("zz") != 0 {
		t.Errorf("Token() = %d, TokenOf(zz) = %d; want the largest key's %d, and 0", l.Token(), l.TokenOf("zz"), largest)
	}
	// Any overlap is refused, all or none: "d" is not taken by the refusal.
	if _, err := other.TryLockMany(ctx, []string{"d", "c"}); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("overlapping TryLockMany = %v, want ErrNotObtained", err)
	}
	eventually(t, time.Second, "the refused attempt undone", func() bool { return countHeld(t, nodes, "d") == 0 })
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	for _, k := range []string{"a", "b", "c"} {
		eventually(t, time.Second, "every key released", func() bool { return countHeld(t, nodes, k) == 0 })
	}
	l2, err := other.TryLockMany(ctx, []string{"c", "a"})
	if err != nil {
		t.Fatalf("TryLockMany after Unlock: %v", err)
	}
	if l2.TokenOf("a") <= l.TokenOf("a") || l2.TokenOf("c") <= l.TokenOf("c") {
		t.Errorf("next tokens a=%d c=%d, want > %d and %d", l2.TokenOf("a"), l2.TokenOf("c"), l.TokenOf("a"), l.TokenOf("c"))
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// A multi-key lock is lost as one: when a majority of nodes lost one of its
// keys, Extend reports the loss and Done closes.
func TestLockManyLostWhenOneKeyIsGone(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLockMany(ctx, []string{"x", "y"}, redlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("TryLockMany: %v", err)
	}
	for _, n := range nodes[:2] {
		n.Del(ctx, redlock.Keys(redlock.DefaultPrefix, "y").Lock)
	}
	requireLost(t, ctx, l)
	eventually(t, time.Second, "x released too", func() bool { return countHeld(t, nodes, "x") == 0 })
}

// Goroutines on two clients lock random overlapping sets of 1–4 of 6 keys,
// in random order, for 5 s: no key ever has two holders, nobody deadlocks or
// starves, and each key's tokens grow with each holding.
func TestLockManyOverlappingSetsExcludeWithoutDeadlock(t *testing.T) {
	const workers, run = 8, 5 * time.Second
	c1, nodes, _ := lab(t, 5)
	clients := []*redlock.Client{c1, newClient(t, nodes)}
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	var inside [6]atomic.Int32
	var mu sync.Mutex
	last := map[string]int64{}
	var overlaps, regressions atomic.Int64
	holds := make([]int, workers)
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%2]
			for time.Now().Before(deadline) {
				idx := rand.Perm(6)[:1+rand.IntN(4)]
				set := make([]string, len(idx))
				for i, k := range idx {
					set[i] = keys[k]
				}
				l, err := c.LockMany(ctxFor(t, 10*time.Second), set)
				if err != nil {
					t.Errorf("worker %d: LockMany(%v): %v", w, set, err)
					return
				}
				mu.Lock()
				for _, k := range idx {
					if inside[k].Add(1) != 1 {
						overlaps.Add(1)
					}
					if tok := l.TokenOf(keys[k]); tok <= last[keys[k]] {
						regressions.Add(1)
					} else {
						last[keys[k]] = tok
					}
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // the work
				for _, k := range idx {
					inside[k].Add(-1)
				}
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("worker %d: Unlock: %v", w, err)
				}
				holds[w]++
			}
		}()
	}
	wg.Wait()
	t.Logf("holds per worker: %v", holds)
	if overlaps.Load() != 0 || regressions.Load() != 0 {
		t.Errorf("overlaps %d, token regressions %d; want 0 and 0", overlaps.Load(), regressions.Load())
	}
	requireFairShares(t, "worker", holds)
}

func TestLockManyRefusesKeysOnSeveralClusterSlots(t *testing.T) {
	nodes := []redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})}
	t.Cleanup(func() { nodes[0].Close() })
	c := newClient(t, nodes)
	_, err := c.TryLockMany(ctxFor(t, time.Second), []string{"a", "b"})
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "slot") {
		t.Errorf("TryLockMany on a cluster with keys on two slots = %v, want ErrInvalid naming the slots", err)
	}
}

func TestSharedHoldsRefuseBadInput(t *testing.T) {
	c, _, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		call func() (*redlock.Lock, error)
	}{
		{"RLock empty key", func() (*redlock.Lock, error) { return c.RLock(ctx, "") }},
		{"TryRLock empty key", func() (*redlock.Lock, error) { return c.TryRLock(ctx, "") }},
		{"Acquire empty name", func() (*redlock.Lock, error) { return c.Acquire(ctx, "", 2) }},
		{"Acquire limit 0", func() (*redlock.Lock, error) { return c.Acquire(ctx, "s", 0) }},
		{"TryAcquire limit -1", func() (*redlock.Lock, error) { return c.TryAcquire(ctx, "s", -1) }},
		{"TryAcquire limit too large", func() (*redlock.Lock, error) { return c.TryAcquire(ctx, "s", redlock.MaxLimit+1) }},
	} {
		if l, err := tc.call(); !errors.Is(err, redlock.ErrInvalid) || l != nil {
			t.Errorf("%s = %v, %v; want nil, ErrInvalid", tc.name, l, err)
		}
	}
}
