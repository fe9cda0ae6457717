package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestTryLockExcludesAndUnlockFrees(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if got := countHeld(t, nodes, "k"); got < 3 {
		t.Fatalf("nodes holding the key = %d, want a majority of 5", got)
	}
	_, err = other.TryLock(ctx, "k")
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotObtained) || !errors.As(err, &qe) {
		t.Fatalf("second TryLock = %v, want ErrNotObtained with a *QuorumError", err)
	}
	// The first TryLock returned at a majority: a node still busy with it may
	// grant the second attempt, never a majority of them.
	if qe.Granted >= qe.Need || qe.Need != 3 || len(qe.Votes) != 5 || qe.Key != "k" {
		t.Errorf("QuorumError = %+v, want fewer than 3 granted of 5, need 3, key k", qe)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	eventually(t, time.Second, "every node released", func() bool { return countHeld(t, nodes, "k") == 0 })
	l2, err := other.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("token of the next holder = %d, want > %d", l2.Token(), l.Token())
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func TestValidityIsTTLMinusElapsedMinusDrift(t *testing.T) {
	c, _, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	ttl := 2 * time.Second
	before := time.Now()
	l, err := c.TryLock(ctx, "k", redlock.WithTTL(ttl), redlock.WithDriftFactor(0.05))
	after := time.Now()
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer l.Unlock(ctx)
	drift := time.Duration(float64(ttl)*0.05) + 2*time.Millisecond
	lo, hi := before.Add(ttl-drift), after.Add(ttl-drift)
	if u := l.Until(); u.Before(lo) || u.After(hi) {
		t.Errorf("Until = start+%v, want start + ttl − drift = start+%v", u.Sub(before), ttl-drift)
	}
}

func TestExtendMovesUntilForward(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k", redlock.WithTTL(time.Second), redlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	first := l.Until()
	eventually(t, time.Second, "time to move past the acquisition", func() bool { return time.Since(first.Add(-time.Second)) > 50*time.Millisecond })
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !l.Until().After(first) {
		t.Errorf("Until after Extend = %v, want after %v", l.Until(), first)
	}
	for i, n := range nodes {
		if pttl := n.PTTL(ctx, redlock.DefaultPrefix+"{k}").Val(); pttl < 900*time.Millisecond {
			t.Errorf("node %d PTTL after Extend = %v, want about the full TTL", i, pttl)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// A lock whose validity ran out without renewal is lost: Done closes before
// Until, Extend refuses, and Unlock reports the loss — while the next holder's
// lock stays intact.
func TestUnlockAfterExpiryReportsLossAndSparesNewHolder(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k", redlock.WithTTL(400*time.Millisecond), redlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	until := l.Until()
	<-l.Done()
	if lostAt := time.Now(); !lostAt.Before(until) {
		t.Errorf("Done closed %v after Until, want before", lostAt.Sub(until))
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", l.Err())
	}
	next, err := other.Lock(ctx, "k", redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatalf("next holder Lock: %v", err)
	}
	if err := l.Extend(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Extend of the lost lock = %v, want ErrLockLost", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Unlock of the lost lock = %v, want ErrLockLost", err)
	}
	if got := countHeld(t, nodes, "k"); got < 3 {
		t.Fatalf("after the old holder's Unlock, %d nodes hold the key, want the new holder's majority", got)
	}
	if err := next.Extend(ctx); err != nil {
		t.Errorf("new holder's Extend = %v, want nil", err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Errorf("new holder's Unlock = %v, want nil", err)
	}
}

// When the keys vanish from a majority while the holder thinks it holds the
// lock (its critical section overran, or masters lost data), Unlock reports
// ErrLockLost, confirmed by the majority.
func TestUnlockReportsLossConfirmedByMajority(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k", redlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	for _, n := range nodes[:3] {
		n.Del(ctx, redlock.DefaultPrefix+"{k}")
	}
	err = l.Unlock(ctx)
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrLockLost) || !errors.As(err, &qe) {
		t.Fatalf("Unlock = %v, want ErrLockLost with a *QuorumError", err)
	}
	if refused := countOutcome(qe, quorum.Refused); refused < 3 {
		t.Errorf("refusals = %d, want ≥ 3", refused)
	}
}

func countOutcome(qe *redlock.QuorumError, o quorum.Outcome) int {
	n := 0
	for _, v := range qe.Votes {
		if v.Outcome == o {
			n++
		}
	}
	return n
}

// Lock gives up when ctx ends; the error tells both why (ctx) and what
// (not obtained), with the last round's votes.
func TestLockCancellationMatchesCtxAndNotObtained(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	held, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer held.Unlock(ctx)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = other.Lock(short, "k")
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &qe) {
		t.Fatalf("Lock past its deadline = %v, want ErrNotObtained, DeadlineExceeded and a *QuorumError", err)
	}

	cancelled, cancel2 := context.WithCancel(ctx)
	go func() { time.Sleep(30 * time.Millisecond); cancel2() }()
	_, err = other.Lock(cancelled, "k")
	if !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want ErrNotObtained and Canceled", err)
	}
}

func TestLockWithoutDeadlineIsBoundedByMaxWait(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	other := newClient(t, nodes, redlock.WithMaxWait(150*time.Millisecond))
	ctx := context.Background()
	held, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer held.Unlock(ctx)
	_, err = other.Lock(ctx, "k")
	if !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want ErrNotObtained and DeadlineExceeded after the maximum wait", err)
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	held, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := other.Lock(ctx, "k")
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned %v while the key was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting Lock: %v", err)
	}
}

func TestCloseEndsLocksAndRefusesCalls(t *testing.T) {
	_, nodes, _ := lab(t, 3)
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed by Close")
	}
	if !errors.Is(l.Err(), redlock.ErrClosed) {
		t.Errorf("Err after Close = %v, want ErrClosed", l.Err())
	}
	if _, err := c.TryLock(ctx, "j"); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("TryLock after Close = %v, want ErrClosed", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Unlock after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	for i, n := range nodes {
		if err := n.Ping(ctx).Err(); err != nil {
			t.Errorf("node %d client unusable after Close: %v", i, err)
		}
	}
}
