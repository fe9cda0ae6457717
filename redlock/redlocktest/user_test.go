package redlocktest_test

import (
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

// A Client from Client is closed when its test ends even with a master
// left frozen: the cleanup thaws it first, so calls still waiting on it end
// at once instead of after go-redis's read timeout (3 s by default).
func TestClientCleanupThawsFrozenMasters(t *testing.T) {
	t.Parallel()
	var ended time.Time
	t.Run("frozen at the end", func(t *testing.T) {
		masters := redlocktest.Start(t, 3)
		locks := masters.Client(t)
		masters.Freeze(0)
		if _, err := locks.TryLock(t.Context(), "job"); err != nil {
			t.Fatalf("TryLock with one of three frozen = %v", err)
		}
		t.Cleanup(func() { ended = time.Now() }) // runs first: cleanups are LIFO
	})
	if took := time.Since(ended); took >= 3*time.Second {
		t.Errorf("cleanup took %v; want less than go-redis's read timeout", took)
	}
}
