package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// TestManyKeysCost compares, for one worker on one lab in interleaved
// rounds, a cycle (acquire + Unlock) of each kind of hold with TryLock's:
// TryLockMany of four keys (issue 11: at most 1.5× one key — one round trip
// per master, not four), TryRLock, and TryAcquire of a limit-4 semaphore.
// It reports; it does not fail on the ratios.
func TestManyKeysCost(t *testing.T) {
	lab := startLab(t)
	c := newQuorumlock(t, lab.Clients(t), redlock.WithAutoRenew(false))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	one := func(i int) error {
		l, err := c.TryLock(ctx, fmt.Sprintf("one:%d", i))
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	four := func(i int) error {
		l, err := c.TryLockMany(ctx, []string{fmt.Sprintf("a:%d", i), fmt.Sprintf("b:%d", i), fmt.Sprintf("c:%d", i), fmt.Sprintf("d:%d", i)})
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	read := func(i int) error {
		l, err := c.TryRLock(ctx, fmt.Sprintf("r:%d", i))
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	permit := func(i int) error {
		l, err := c.TryAcquire(ctx, fmt.Sprintf("s:%d", i), 4)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	kinds := []struct {
		name string
		f    func(int) error
	}{{"TryLock (1 key)", one}, {"TryLockMany (4 keys)", four}, {"TryRLock", read}, {"TryAcquire (limit 4)", permit}}
	took := make([]time.Duration, len(kinds))
	cycles := make([]int, len(kinds))
	seq := 0
	for round := range 6 {
		for j := range kinds {
			k := (j + round) % len(kinds) // each kind in every position, in turn
			start := time.Now()
			for time.Since(start) < 500*time.Millisecond {
				seq++
				if err := kinds[k].f(seq); err != nil {
					t.Logf("cycle %d: %v", seq, err)
					continue
				}
				cycles[k]++
			}
			took[k] += time.Since(start)
		}
	}
	per := func(k int) time.Duration { return took[k] / time.Duration(max(cycles[k], 1)) }
	for k, kind := range kinds {
		t.Logf("%-22s + Unlock: %v per cycle, %.2f× TryLock", kind.name, per(k).Round(time.Microsecond), float64(per(k))/float64(per(0)))
	}
	t.Logf("target: TryLockMany of 4 keys ≤ 1.5× TryLock — one round trip per master, not four")
}
