package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// permitLock is the name of permit i of the semaphore name on the nodes.
func permitLock(name string, i int) string {
	return redlock.Keys(redlock.DefaultPrefix, name).Lock + ":permit:" + string(rune('0'+i))
}

// permitHolders returns, per node, the owner of permit i of name ("" none).
func permitHolders(t *testing.T, nodes []redis.UniversalClient, name string, i int) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for n, nd := range nodes {
		v, err := nd.HGet(context.Background(), permitLock(name, i), "owner").Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("node %d: HGET: %v", n, err)
		}
		out[n] = v
	}
	return out
}

// 12 goroutines on 3 clients share a semaphore of 3 permits for 5 s: never
// more than 3 inside at once, and everyone gets in.
func TestSemaphoreNeverAdmitsMoreThanLimit(t *testing.T) {
	const workers, limit, run = 12, 3, 5 * time.Second
	c1, nodes, _ := lab(t, 5)
	clients := []*redlock.Client{c1, newClient(t, nodes), newClient(t, nodes)}
	var inside, most atomic.Int32
	holds := make([]int, workers)
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				l, err := clients[w%3].Acquire(ctxFor(t, 10*time.Second), "jobs", limit)
				if err != nil {
					t.Errorf("worker %d: Acquire: %v", w, err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond) // the work
				inside.Add(-1)
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("worker %d: Unlock: %v", w, err)
				}
				holds[w]++
			}
		}()
	}
	wg.Wait()
	t.Logf("most holders at once %d; holds per worker %v", most.Load(), holds)
	if most.Load() > limit {
		t.Errorf("%d holders at once, want ≤ %d", most.Load(), limit)
	}
	if most.Load() < 2 {
		t.Errorf("at most %d holder at once: the permits were not shared", most.Load())
	}
	for w, n := range holds {
		if n == 0 {
			t.Errorf("worker %d never got a permit", w)
		}
	}
}

// The interleaving that breaks a counting semaphore over a quorum: with 5
// masters and a limit of 2, A is admitted by masters 0–2 and B by 2–4; a
// counter would now be at 1 on masters 0, 1, 3, 4, which admit C. With
// permits, C would need a majority for A's or B's permit: it is refused.
func TestSemaphoreLimitTwoOfFiveAdmitsNoThird(t *testing.T) {
	c, nodes, _ := lab(t, 5, redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 10*time.Second)
	a, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	b, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	pa := 0
	if permitHolders(t, nodes, "s", 0)[0] == "" {
		pa = 1
	}
	for _, n := range nodes[3:] { // A's grant never reached masters 3, 4
		n.Del(ctx, permitLock("s", pa))
	}
	for _, n := range nodes[:2] { // B's never reached masters 0, 1
		n.Del(ctx, permitLock("s", 1-pa))
	}
	for range 5 {
		if l, err := c.TryAcquire(ctx, "s", 2); !errors.Is(err, redlock.ErrNotObtained) {
			t.Fatalf("C: %v, %v; want ErrNotObtained", l, err)
		}
	}
	if _, err := c.Acquire(ctxFor(t, 300*time.Millisecond), "s", 2); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("C waiting: %v, want ErrNotObtained", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A Unlock: %v", err)
	}
	l, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("C after A left: %v", err)
	}
	l.Unlock(ctx)
	b.Unlock(ctx)
}

func TestSemaphoreRefusesAnotherLimitWhileHeld(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryAcquire(ctx, "s", 3)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	for _, limit := range []int{1, 2, 4} {
		if _, err := c.TryAcquire(ctx, "s", limit); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("TryAcquire with limit %d while held with 3 = %v, want ErrInvalid", limit, err)
		}
		if _, err := c.Acquire(ctx, "s", limit); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Acquire with limit %d while held with 3 = %v, want ErrInvalid", limit, err)
		}
	}
	eventually(t, time.Second, "refused attempts undone", func() bool {
		held := 0
		for i := range 4 {
			for _, h := range permitHolders(t, nodes, "s", i) {
				if h != "" {
					held++
				}
			}
		}
		return held == 3 // the one permit of l, on 3 nodes
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	l2, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("TryAcquire with a new limit once none is held: %v", err)
	}
	l2.Unlock(ctx)
}
