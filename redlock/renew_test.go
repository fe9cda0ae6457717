package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// The watchdog keeps a 300 ms lease held for far longer than its TTL, and
// another client stays excluded throughout.
func TestWatchdogKeepsShortLeaseForSeconds(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 20*time.Second)
	l, err := c.TryLock(ctx, "k", redlock.WithTTL(400*time.Millisecond))
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	first := l.Until()
	end := time.Now().Add(2 * time.Second)
	probes := 0
	for time.Now().Before(end) {
		if _, err := other.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
			t.Fatalf("probe %d: another client's TryLock = %v, want ErrNotObtained", probes, err)
		}
		probes++
		select {
		case <-l.Done():
			t.Fatalf("lock ended after %d probes: %v", probes, l.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if l.Err() != nil {
		t.Fatalf("Err after 2s = %v, want nil", l.Err())
	}
	if !l.Until().After(first.Add(time.Second)) {
		t.Errorf("Until moved %v in 2s, want renewals to move it by over 1s", l.Until().Sub(first))
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// No renewal outlives Unlock: after Unlock returns, the key stays gone even
// across several renewal periods.
func TestNoRenewalAfterUnlock(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	for i := 0; i < 70; i += 3 {
		l, err := c.TryLock(ctx, "k", redlock.WithTTL(200*time.Millisecond), redlock.WithNodeTimeout(60*time.Millisecond))
		if err != nil {
			t.Fatalf("TryLock %d: %v", i, err)
		}
		time.Sleep(time.Duration(i) * time.Millisecond) // vary the phase against the 66 ms renewal period
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
		eventually(t, time.Second, "every node released", func() bool { return countHeld(t, nodes, "k") == 0 })
	}
}

// With a fake clock, the lock's timers are visible: the expiry and the
// renewal are armed while it is held, and none is left once Unlock returns,
// so no renewal can follow it.
func TestUnlockDisarmsEveryTimer(t *testing.T) {
	fc := clock.NewFake(time.Now())
	c, _, _ := lab(t, 3, redlock.WithClock(fc))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if n := fc.Sleepers(); n != 2 {
		t.Fatalf("timers armed while held = %d, want 2 (expiry, renewal)", n)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if n := fc.Sleepers(); n != 0 {
		t.Fatalf("timers armed after Unlock = %d, want 0", n)
	}
}

// The watchdog renews every TTL/3 of the lock's clock: advancing a fake clock
// by that much moves Until forward through a real quorum extension.
func TestWatchdogRenewsEveryThirdOfTTL(t *testing.T) {
	fc := clock.NewFake(time.Now())
	ttl := 3 * time.Second
	c, nodes, _ := lab(t, 3, redlock.WithClock(fc), redlock.WithTTL(ttl))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer l.Unlock(ctx)
	first := l.Until()
	fc.Advance(ttl/3 - time.Millisecond)
	if l.Until() != first {
		t.Fatalf("Until moved before TTL/3")
	}
	fc.Advance(time.Millisecond)
	eventually(t, 2*time.Second, "the renewal at TTL/3", func() bool { return l.Until().Equal(first.Add(ttl / 3)) })
	for i, n := range nodes {
		if pttl := n.PTTL(ctx, redlock.DefaultPrefix+"{k}").Val(); pttl < ttl-500*time.Millisecond {
			t.Errorf("node %d PTTL after renewal = %v, want about %v", i, pttl, ttl)
		}
	}
}

func TestDoRunsUnderLockAndReleases(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	held := 0
	err := c.Do(ctx, "k", func(ctx context.Context) error {
		held = countHeld(t, nodes, "k")
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if held < 2 {
		t.Errorf("nodes holding the key inside Do = %d, want a majority of 3", held)
	}
	eventually(t, time.Second, "every node released after Do", func() bool { return countHeld(t, nodes, "k") == 0 })
	boom := errors.New("boom")
	if err := c.Do(ctx, "k", func(context.Context) error { return boom }); !errors.Is(err, boom) || errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Do returned %v, want fn's error alone", err)
	}
	eventually(t, time.Second, "every node released after a failed fn", func() bool { return countHeld(t, nodes, "k") == 0 })
}

func TestDoReleasesOnPanic(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	func() {
		defer func() {
			if recover() != "boom" {
				t.Error("panic did not propagate")
			}
		}()
		c.Do(ctx, "k", func(context.Context) error { panic("boom") })
	}()
	eventually(t, time.Second, "every node released after the panic", func() bool { return countHeld(t, nodes, "k") == 0 })
}

// Lock.Run is Do for a hold of any kind: fn runs while the hold is held,
// with the Lock in its ctx, and the hold is released after; a released hold
// does not run fn again, a lost one does not run it at all, a nil fn leaves
// the hold as it was.
func TestRunHoldsEveryKind(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 20*time.Second)
	kinds := []struct {
		name    string
		acquire func() (*redlock.Lock, error)
		held    func() int // nodes that hold it
	}{
		{"Lock", func() (*redlock.Lock, error) { return c.Lock(ctx, "k") },
			func() int { return countHeld(t, nodes, "k") }},
		{"LockMany", func() (*redlock.Lock, error) { return c.LockMany(ctx, []string{"a", "b"}) },
			func() int { return min(countHeld(t, nodes, "a"), countHeld(t, nodes, "b")) }},
		{"RLock", func() (*redlock.Lock, error) { return c.RLock(ctx, "r") },
			func() int {
				readers := redlock.Keys(redlock.DefaultPrefix, "r").Readers
				return testkit.Count(nodes, func(n redis.UniversalClient) bool { return n.ZCard(ctx, readers).Val() > 0 })
			}},
		{"Acquire", func() (*redlock.Lock, error) { return c.Acquire(ctx, "s", 2) },
			func() int { return permitsHeld(t, nodes, "s", 2) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, err := k.acquire()
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			if err := l.Run(ctx, nil); !errors.Is(err, redlock.ErrInvalid) || l.Err() != nil {
				t.Fatalf("Run(nil) = %v, hold's Err() = %v; want ErrInvalid and the hold kept", err, l.Err())
			}
			inside := 0
			err = l.Run(ctx, func(fctx context.Context) error {
				if got, ok := redlock.FromContext(fctx); !ok || got != l {
					t.Errorf("FromContext in Run = %p, %v; want the hold %p", got, ok, l)
				}
				inside = k.held()
				return nil
			})
			if err != nil || inside < 2 {
				t.Fatalf("Run = %v with the hold on %d of 3 nodes inside; want nil, a majority", err, inside)
			}
			if !errors.Is(l.Err(), redlock.ErrNotHeld) {
				t.Errorf("Err() after Run = %v, want ErrNotHeld", l.Err())
			}
			eventually(t, 2*time.Second, "every node released after Run", func() bool { return k.held() == 0 })
			ran := false
			if err := l.Run(ctx, func(context.Context) error { ran = true; return nil }); !errors.Is(err, redlock.ErrNotHeld) || ran {
				t.Errorf("Run of a released hold = %v (fn ran: %v), want ErrNotHeld, fn not run", err, ran)
			}

			// A hold lost inside fn: fn's ctx ends with ErrLockLost, and Run
			// says so. Then a lost hold: fn does not run.
			l, err = k.acquire()
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			err = l.Run(ctx, func(fctx context.Context) error {
				dropEverything(t, nodes)
				l.Extend(fctx) // a majority refuses: lost
				select {
				case <-fctx.Done():
					if cause := context.Cause(fctx); !errors.Is(cause, redlock.ErrLockLost) {
						t.Errorf("fn's ctx cause = %v, want ErrLockLost", cause)
					}
					return fctx.Err()
				case <-time.After(2 * time.Second):
					return errors.New("fn's ctx not cancelled within 2 s of the loss")
				}
			})
			if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled) {
				t.Errorf("Run of a hold lost inside fn = %v, want ErrLockLost joined with fn's context.Canceled", err)
			}
			l, err = k.acquire()
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			dropEverything(t, nodes)
			l.Extend(ctx)
			ran = false
			if err := l.Run(ctx, func(context.Context) error { ran = true; return nil }); !errors.Is(err, redlock.ErrLockLost) || ran {
				t.Errorf("Run of a lost hold = %v (fn ran: %v), want ErrLockLost, fn not run", err, ran)
			}
		})
	}
}

// dropEverything deletes every key the library wrote on the nodes, as an
// empty restart would, keeping the lab's vouch for the nodes' start.
func dropEverything(t *testing.T, nodes []redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	for i, n := range nodes {
		keys, err := n.Keys(ctx, redlock.DefaultPrefix+"{*").Result()
		if err != nil {
			t.Fatalf("node %d: KEYS: %v", i, err)
		}
		if len(keys) > 0 {
			if err := n.Del(ctx, keys...).Err(); err != nil {
				t.Fatalf("node %d: DEL: %v", i, err)
			}
		}
	}
}
