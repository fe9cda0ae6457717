package redlock_test

import (
	"context"
	"errors"
	"fmt"
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
	// TryLock returns once a majority granted: let the others' calls land
	// first, or one landing after the deletes below grants the lock again.
	eventually(t, 5*time.Second, "every master granted the lock", func() bool {
		return countHeld(t, nodes, "k") == len(nodes)
	})
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

// A Lock on a held key waits in line until the holder releases it, its ctx
// ends or the Client's maximum wait passes; when it gives up, the error tells
// both why (ctx) and what (not obtained). A row per end of the wait.
func TestLockWaitsUntil(t *testing.T) {
	tests := []struct {
		name string
		opts []redlock.Option // the waiting Client's
		ctx  func(test context.Context) (context.Context, context.CancelFunc)
		// end ends the wait once the waiter is in line on a majority; nil
		// when the wait ends by itself.
		end       func(cancel context.CancelFunc, held *redlock.Lock) error
		want      []error // each matched by the waiter's error; none: obtained
		wantVotes bool    // the error carries the last round's *QuorumError
	}{
		{
			name: "its deadline",
			ctx: func(test context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(test, 100*time.Millisecond)
			},
			want: []error{redlock.ErrNotObtained, context.DeadlineExceeded}, wantVotes: true,
		},
		{
			name: "its ctx is cancelled",
			ctx:  context.WithCancel,
			end:  func(cancel context.CancelFunc, _ *redlock.Lock) error { cancel(); return nil },
			want: []error{redlock.ErrNotObtained, context.Canceled},
		},
		{
			name: "the maximum wait, without a deadline",
			opts: []redlock.Option{redlock.WithMaxWait(150 * time.Millisecond)},
			ctx: func(context.Context) (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			},
			want: []error{redlock.ErrNotObtained, context.DeadlineExceeded},
		},
		{
			name: "the release",
			ctx:  context.WithCancel,
			end:  func(_ context.CancelFunc, held *redlock.Lock) error { return held.Unlock(context.Background()) },
		},
	}
	c, nodes, _ := lab(t, 3)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprint("k", i)
			other := newClient(t, nodes, tt.opts...)
			test := ctxFor(t, 10*time.Second)
			held, err := c.TryLock(test, key)
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			defer held.Unlock(test)
			ctx, cancel := tt.ctx(test)
			defer cancel()
			got := make(chan error, 1)
			go func() {
				l, err := other.Lock(ctx, key)
				if err == nil {
					err = l.Unlock(test)
				}
				got <- err
			}()
			if tt.end != nil {
				eventually(t, 5*time.Second, "the waiter in line on a majority", func() bool {
					return inLine(t, nodes, key, "") >= quorum.Majority(len(nodes))
				})
				select {
				case err := <-got:
					t.Fatalf("Lock returned %v while the key was held", err)
				default:
				}
				if err := tt.end(cancel, held); err != nil {
					t.Fatalf("ending the wait: %v", err)
				}
			}
			err = <-got
			var qe *redlock.QuorumError
			if len(tt.want) == 0 && err != nil {
				t.Fatalf("waiting Lock: %v, want the lock", err)
			}
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("Lock = %v, want it to match %v", err, want)
				}
			}
			if tt.wantVotes && !errors.As(err, &qe) {
				t.Errorf("Lock = %v, want a *QuorumError with the last round's votes", err)
			}
		})
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
