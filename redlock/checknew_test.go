package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// CheckNew's refusal of masters in use is a *redlock.InUseError matching
// ErrInUse, however the survey is done (internal/master): errors.As and
// errors.Is keep working through the wrapper.
func TestCheckNewRefusesMastersInUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := redislab.Start(t, 3).Clients(t)
	for i, err := range redlock.CheckNew(ctx, nodes, redlock.DefaultPrefix) {
		if err != nil {
			t.Fatalf("CheckNew on new masters: node %d: %v, want nil", i, err)
		}
	}
	c := newClient(t, nodes, redlock.WithRestartGuard(0))
	l, err := c.TryLock(ctx, "in-use")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer l.Unlock(ctx)
	for i, err := range redlock.CheckNew(ctx, nodes, redlock.DefaultPrefix) {
		var e *redlock.InUseError
		if !errors.As(err, &e) || !errors.Is(err, redlock.ErrInUse) || e.Other != 0 {
			t.Errorf("CheckNew with a lock held: node %d: %v (%#v), want an *InUseError naming node 0, matching ErrInUse", i, err, e)
		}
	}
}
