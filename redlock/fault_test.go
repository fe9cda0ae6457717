package redlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// faultLab starts n masters, each behind a fault proxy, and returns a Client
// that talks through the proxies, the proxies, and direct clients for
// inspection. The proxied clients keep go-redis defaults that ignore context
// deadlines once a command is written (no ContextTimeoutEnabled): the
// library's node timeout must hold anyway.
func faultLab(t *testing.T, n int, opts ...redlock.Option) (*redlock.Client, []*faultproxy.Proxy, []redis.UniversalClient) {
	t.Helper()
	_, direct, l := lab(t, n)
	proxies := make([]*faultproxy.Proxy, n)
	via := make([]redis.UniversalClient, n)
	for i, node := range l.Nodes {
		proxies[i] = faultproxy.Start(t, node.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: proxies[i].Addr(), ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		via[i] = rdb
	}
	return newClient(t, via, opts...), proxies, direct
}

// faultTimeout is the node timeout of the fault tests: small enough that a
// fault costs visibly less than the waits the tests bound, large enough that
// a loaded two-core machine under -race does not trip it on healthy nodes.
const faultTimeout = 100 * time.Millisecond

func TestFailedAttemptWithLostRepliesLeavesNoKey(t *testing.T) {
	faults := map[string]func(p *faultproxy.Proxy){
		"replies dropped":               func(p *faultproxy.Proxy) { p.SetDropReplies(true) },
		"replies delayed past timeout":  func(p *faultproxy.Proxy) { p.SetLatency(0, 4*faultTimeout) },
		"requests delayed past timeout": func(p *faultproxy.Proxy) { p.SetLatency(4*faultTimeout, 0) },
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			c, proxies, direct := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout))
			ctx := ctxFor(t, 10*time.Second)
			for _, p := range proxies[:3] {
				fault(p)
			}
			_, err := c.TryLock(ctx, "k")
			if !errors.Is(err, redlock.ErrNotObtained) {
				t.Fatalf("TryLock with 3 of 5 replies lost = %v, want ErrNotObtained", err)
			}
			eventually(t, 3*time.Second, "no node keeps the failed attempt's key", func() bool {
				return countHeld(t, direct, "k") == 0
			})
		})
	}
}

// A re-sent attempt with the same value (its first reply was lost) is
// granted, not blocked by itself: the lock is obtained once the fault clears.
func TestLockSucceedsAfterLostRepliesClear(t *testing.T) {
	c, proxies, direct := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout))
	ctx := ctxFor(t, 10*time.Second)
	for _, p := range proxies[:3] {
		p.SetDropReplies(true)
	}
	got := make(chan error, 1)
	go func() {
		l, err := c.Lock(ctx, "k")
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	// Lock listens for a release only after an attempt failed: its first,
	// whose replies were lost (or it returned, and got tells why).
	eventually(t, 5*time.Second, "a failed attempt", func() bool { return listening(t, direct, "k") > 0 || len(got) > 0 })
	for _, p := range proxies[:3] {
		p.SetDropReplies(false)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock, then Unlock: %v", err)
	}
}

// A blackholed node costs at most one node timeout per call; with a healthy
// majority it costs nothing.
func TestBlackholedNodesCostAtMostOneTimeout(t *testing.T) {
	c, proxies, _ := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout))
	ctx := ctxFor(t, 20*time.Second)
	bound := faultTimeout + 60*time.Millisecond // one node timeout, plus scheduling slack under -race
	proxies[4].SetBlackhole(true)
	for i := 0; i < 10; i++ {
		start := time.Now()
		l, err := c.TryLock(ctx, "k")
		if err != nil {
			t.Fatalf("TryLock with 1 of 5 blackholed: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock with 1 of 5 blackholed: %v", err)
		}
		if d := time.Since(start); d > faultTimeout {
			t.Errorf("cycle %d took %v with one blackholed node, want < one node timeout (%v): the blackholed node must not be waited for", i, d, faultTimeout)
		}
	}
	for _, p := range proxies[2:] {
		p.SetBlackhole(true)
	}
	start := time.Now()
	_, err := c.TryLock(ctx, "k")
	if d := time.Since(start); !errors.Is(err, redlock.ErrNotObtained) || d > bound {
		t.Errorf("TryLock with 3 of 5 blackholed = %v after %v, want ErrNotObtained within %v", err, d, bound)
	}
}

// Unlock with an unanswering majority reports no loss — an unanswered node is
// unknown, not refused — but says the release is unconfirmed.
func TestUnlockUnansweredIsNotLoss(t *testing.T) {
	c, proxies, _ := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	for _, p := range proxies[:3] {
		p.SetBlackhole(true)
	}
	err = l.Unlock(ctx)
	var qe *redlock.QuorumError
	if err == nil || errors.Is(err, redlock.ErrLockLost) || !errors.As(err, &qe) {
		t.Fatalf("Unlock with 3 of 5 unanswering = %v, want a *QuorumError that is not ErrLockLost", err)
	}
}

func TestSlowNodeDoesNotSlowMedianAcquisition(t *testing.T) {
	c, proxies, _ := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout))
	ctx := ctxFor(t, 30*time.Second)
	proxies[0].SetLatency(0, 40*time.Millisecond)
	var took []time.Duration
	for i := 0; i < 31; i++ {
		start := time.Now()
		l, err := c.TryLock(ctx, "k")
		took = append(took, time.Since(start))
		if err != nil {
			t.Fatalf("TryLock %d: %v", i, err)
		}
		if err := l.Unlock(ctx); errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
	slices.Sort(took)
	if median := took[len(took)/2]; median >= 20*time.Millisecond {
		t.Errorf("median acquisition with one node 40 ms slow = %v, want < 20 ms (the slow node must not be waited for)", median)
	}
}

// Losing the majority mid-lease: renewal fails, and the holder is told —
// Done closes and Err is ErrLockLost — strictly before Until.
func TestMajorityLossClosesDoneBeforeUntil(t *testing.T) {
	c, proxies, _ := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout), redlock.WithTTL(400*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	first := l.Until()
	eventually(t, 2*time.Second, "a renewal", func() bool { return l.Until().After(first) })
	for _, p := range proxies[:3] {
		p.SetBlackhole(true)
	}
	select {
	case <-l.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done not closed within 2s of losing the majority")
	}
	lostAt := time.Now()
	if until := l.Until(); !lostAt.Before(until) {
		t.Errorf("Done closed %v after Until, want strictly before", lostAt.Sub(until))
	} else {
		t.Logf("loss signalled %v before the end of validity", until.Sub(lostAt))
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", l.Err())
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Unlock of the lost lock = %v, want ErrLockLost", err)
	}
}

// Do cancels fn's ctx as soon as the lock is lost, with ErrLockLost as the
// cause, and returns ErrLockLost joined with fn's error.
func TestDoCancelsFnWhenLockLost(t *testing.T) {
	c, proxies, _ := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout), redlock.WithTTL(400*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	var cause error
	err := c.Do(ctx, "k", func(fctx context.Context) error {
		for _, p := range proxies[:3] {
			p.SetBlackhole(true)
		}
		select {
		case <-fctx.Done():
			cause = context.Cause(fctx)
			return fctx.Err()
		case <-time.After(3 * time.Second):
			return errors.New("fn's ctx not cancelled within 3s of losing the majority")
		}
	})
	if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want ErrLockLost joined with fn's context.Canceled", err)
	}
	if !errors.Is(cause, redlock.ErrLockLost) {
		t.Errorf("fn's ctx cause = %v, want ErrLockLost", cause)
	}
}

// A minority of nodes blackholed must not stop contended waiters: every
// waiter keeps being served. (Waiters once lost their place in line on the
// nodes that granted a failed attempt, so two waiters splitting the three
// reachable nodes swapped places forever: 0 acquisitions in 30 s.)
func TestContendedWaitersStayLiveWithMinorityBlackholed(t *testing.T) {
	c, proxies, _ := faultLab(t, 5, redlock.WithNodeTimeout(faultTimeout), redlock.WithTTL(time.Second))
	ctx := ctxFor(t, 30*time.Second)
	proxies[3].SetBlackhole(true)
	proxies[4].SetBlackhole(true)
	const waiters = 4
	counts := make([]int, waiters)
	end := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				l, err := c.Lock(lctx, "k")
				cancel()
				if err != nil {
					t.Errorf("waiter %d: %v", w, err)
					return
				}
				counts[w]++
				time.Sleep(5 * time.Millisecond) // the holder's work
				l.Unlock(ctx)
			}
		}()
	}
	wg.Wait()
	t.Logf("acquisitions per waiter with 2 of 5 blackholed: %v", counts)
	if slices.Min(counts) < 3 {
		t.Errorf("acquisitions per waiter %v in 2 s: a waiter was starved with a minority down", counts)
	}
}

// Close waits for the calls the Client has in flight, and calls to dead
// masters — whose redis clients retry their dials for seconds — are cut at
// their deadline plus a short window, so Close stays prompt.
func TestCloseWithDeadMastersIsPrompt(t *testing.T) {
	l := redislab.Start(t, 5)
	l.Trust(t, redlock.TrustStart)
	l.RequireControl(t)
	c, err := redlock.New(l.Clients(t), redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	l.Kill(t, 3, 4)
	ctx := ctxFor(t, 10*time.Second)
	lk, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock with 2 of 5 dead: %v", err)
	}
	if err := lk.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with two dead masters, want well under the redis clients' dial retries", d)
	}
}
