package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// The default restart guard (no WithRestartGuard) does not depend on who
// asks: A holds keys with a long TTL on masters 0–2 (3 and 4 down); masters
// 2, 3 and 4 restart empty. B, a fresh Client with a far shorter TTL and no
// guard of its own, learns A's TTL from masters 0 and 1 (its first round's
// refusals carry it) and is never granted while A holds its key — and gets
// it once the restarted masters have been up that long. B', whose explicit
// WithRestartGuard is its own short TTL, shows the override is honoured: it
// counts master 2 early and overlaps A, the hazard WithRestartGuard's doc
// warns of.
func TestGuardDefaultCoversLongestTTLInUse(t *testing.T) {
	const long, short = 4 * time.Second, 500 * time.Millisecond
	l := safetyLab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	l.Kill(t, 3, 4)
	nodes := l.Clients(t, failFast)
	a := newClient(t, nodes, redlock.WithTTL(long), redlock.WithAutoRenew(false))
	held := map[string]*redlock.Lock{}
	for _, key := range []string{"default-guard", "short-override"} {
		h, err := a.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("A: TryLock %s with masters 3, 4 down: %v", key, err)
		}
		requireHeldOn(t, ctx, nodes, key, 0, 1, 2)
		held[key] = h
	}
	l.Restart(t, true, 3, 4, 2)
	requireNoState(t, ctx, l, "default-guard", 2, 3, 4)
	requireNoState(t, ctx, l, "short-override", 2, 3, 4)

	overlaps := make(chan int, 1)
	go func() {
		o := newClient(t, l.Clients(t), redlock.WithTTL(short), redlock.WithRestartGuard(short))
		overlaps <- countOverlaps(ctx, o, held["short-override"], "short-override")
	}()

	b := newClient(t, l.Clients(t), redlock.WithTTL(short))
	neverGranted(t, contend(t, ctx, b, held["default-guard"], "default-guard"), 2, 3, 4)
	if n := <-overlaps; n == 0 {
		t.Error("B', with WithRestartGuard at its own short TTL, never overlapped A: the override was not honoured (or the test proved nothing)")
	} else {
		t.Logf("B', with WithRestartGuard(%v), was granted A's key %d times while A held it for %v", short, n, long)
	}
	next := eventuallyLocked(t, 3*long, "B locks once the restarted masters are past A's TTL", func() (*redlock.Lock, error) {
		return b.TryLock(ctx, "default-guard")
	})
	if next.Token() <= held["default-guard"].Token() {
		t.Errorf("B's token = %d after A's %d, want larger", next.Token(), held["default-guard"].Token())
	}
	next.Unlock(ctx)
}

// countOverlaps has o try key again and again while held is valid, and
// returns how many times o was granted it while held was still held.
func countOverlaps(ctx context.Context, o *redlock.Client, held *redlock.Lock, key string) int {
	n := 0
	for time.Now().Before(held.Until()) {
		if got, err := o.TryLock(ctx, key); err == nil {
			if held.Err() == nil && time.Now().Before(held.Until()) {
				n++
			}
			got.Unlock(ctx)
		}
		time.Sleep(retryEvery)
	}
	return n
}

// Brand-new masters, not vouched for, that a Client meets all at once are
// indistinguishable from a deployment that restarted empty as a whole: no
// node is old enough to have kept a lease, so none counts until it has been
// up for MaxRestartGuard — not merely the Client's TTL. Vouched for
// (TrustStart), they count at once. The Client's clock is a fake: its
// Advance stands for the time the masters have been up.
func TestGuardBrandNewMastersWaitMaxRestartGuard(t *testing.T) {
	const ttl = 2 * time.Second
	l := redislab.Start(t, 3) // not vouched for
	// Masters just started: an outside lab's (REDLOCK_ADDRS) were vouched for.
	l.RequireOwn(t)
	ctx := ctxFor(t, 10*time.Second)
	fc := clock.NewFake(time.Now())
	c := newClient(t, l.Clients(t), redlock.WithClock(fc), redlock.WithTTL(ttl), redlock.WithAutoRenew(false))
	try := func(when string) error { // a key of its own: the last one's undo may be on its way
		t.Helper()
		lk, err := c.TryLock(ctx, when)
		if err == nil {
			if err := lk.Unlock(ctx); err != nil {
				t.Fatalf("%s: Unlock: %v", when, err)
			}
		}
		return err
	}
	if err := try("at start"); !errors.Is(err, redlock.ErrNodeRestarted) {
		t.Fatalf("TryLock on masters just started = %v, want ErrNodeRestarted", err)
	}
	fc.Advance(3 * ttl)
	if err := try("after 3 TTLs"); !errors.Is(err, redlock.ErrNodeRestarted) {
		t.Fatalf("TryLock on new masters up for 3 TTLs but less than MaxRestartGuard = %v, want ErrNodeRestarted", err)
	}
	fc.Advance(redlock.MaxRestartGuard)
	if err := try("after MaxRestartGuard"); err != nil {
		t.Fatalf("TryLock on masters up for MaxRestartGuard: %v", err)
	}

	l.Trust(t, redlock.TrustStart)
	vouched := newClient(t, l.Clients(t), redlock.WithTTL(ttl))
	lk, err := vouched.TryLock(ctx, "v")
	if err != nil {
		t.Fatalf("TryLock on vouched-for masters: %v", err)
	}
	lk.Unlock(ctx)
}

// Readers and permits record their TTLs too: a long reader, and a long
// permit holder, kept on two masters while three restarted empty, are
// never overlapped by a fresh short-TTL writer or permit holder.
func TestGuardDefaultCoversReadersAndPermits(t *testing.T) {
	const long, short = 3 * time.Second, 500 * time.Millisecond
	l := safetyLab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	l.Kill(t, 3, 4)
	a := newClient(t, l.Clients(t, failFast), redlock.WithTTL(long), redlock.WithAutoRenew(false))
	reader, err := a.TryRLock(ctx, "read")
	if err != nil {
		t.Fatalf("A: TryRLock with masters 3, 4 down: %v", err)
	}
	permit, err := a.TryAcquire(ctx, "sem", 1)
	if err != nil {
		t.Fatalf("A: TryAcquire with masters 3, 4 down: %v", err)
	}
	l.Restart(t, true, 3, 4, 2)

	b := newClient(t, l.Clients(t), redlock.WithTTL(short))
	tries := map[string]func() (*redlock.Lock, error){
		"writer": func() (*redlock.Lock, error) { return b.TryLock(ctx, "read") },
		"permit": func() (*redlock.Lock, error) { return b.TryAcquire(ctx, "sem", 1) },
	}
	held := map[string]*redlock.Lock{"writer": reader, "permit": permit}
	attempts := 0
	for time.Now().Before(reader.Until()) && time.Now().Before(permit.Until()) {
		for what, try := range tries {
			h := held[what]
			holding := h.Err() == nil
			got, err := try()
			if err == nil {
				if holding {
					t.Fatalf("overlap: B's %s granted (token %d) while A holds (Err() nil, %v of validity left)",
						what, got.Token(), time.Until(h.Until()).Round(time.Millisecond))
				}
				got.Unlock(ctx)
			}
			attempts++
		}
		time.Sleep(retryEvery)
	}
	if attempts < 10 {
		t.Fatalf("B made %d attempts while A held: the test proved nothing", attempts)
	}
}
