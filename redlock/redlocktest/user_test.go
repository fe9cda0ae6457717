package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/redlocktest"
)

// The test of README's "Testing your code": a user's code (Payouts, in
// example_test.go) under faults, with no server to install.
func TestPayoutSurvivesAMinority(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 5) // five in-process masters, stopped with the test
	payouts := &Payouts{Locks: masters.Client(t)}

	masters.Kill(0)   // connections refused
	masters.Freeze(1) // calls time out
	masters.SetLatency(2, 20*time.Millisecond)
	if err := payouts.Pay(t.Context(), "7"); err != nil {
		t.Fatalf("Pay with a minority down = %v", err)
	}

	masters.Kill(2) // now a majority is gone
	ctx := ctxFor(t, 500*time.Millisecond)
	if err := payouts.Pay(ctx, "8"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("Pay with a majority down = %v; want ErrNotObtained", err)
	}
}

// A test that ends with a master frozen ends at once. The Clusters'
// clients end their calls with their context, so a call to the frozen
// master does not wait out go-redis's read timeout (3 s, and its
// retries); and Client's cleanup thaws the master before Close, which
// would otherwise wait seconds for a waiter's subscription to it.
func TestCleanupWithAFrozenMasterIsQuick(t *testing.T) {
	t.Parallel()
	var ended time.Time
	t.Run("frozen at the end", func(t *testing.T) {
		masters := redlocktest.Start(t, 3)
		locks := masters.Client(t)
		masters.Freeze(0)
		masters.Kill(1) // no majority: Do waits, subscribed to every master
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		if err := locks.Do(ctx, "job", func(context.Context) error { return nil }); !errors.Is(err, redlock.ErrNotObtained) {
			t.Fatalf("Do with one of three frozen and one killed = %v; want ErrNotObtained", err)
		}
		t.Cleanup(func() { ended = time.Now() }) // runs first: cleanups are LIFO
	})
	if took := time.Since(ended); took >= 3*time.Second {
		t.Errorf("cleanup took %v; want less than go-redis's read timeout", took)
	}
}
