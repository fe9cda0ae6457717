package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// TestManyKeysCost compares one worker's TryLockMany of four keys + Unlock
// with TryLock of one key + Unlock on the same lab, in interleaved rounds
// (issue 11: four keys should cost at most 1.5× one key — one round trip
// per master, not four). It reports; it does not fail on the ratio.
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
	var took [2]time.Duration
	var cycles [2]int
	seq := 0
	for round := range 6 {
		for k, f := range []func(int) error{one, four} {
			if round%2 == 1 {
				k, f = 1-k, []func(int) error{one, four}[1-k]
			}
			start := time.Now()
			for time.Since(start) < 500*time.Millisecond {
				seq++
				if err := f(seq); err != nil {
					t.Logf("cycle %d: %v", seq, err)
					continue
				}
				cycles[k]++
			}
			took[k] += time.Since(start)
		}
	}
	per := func(k int) time.Duration { return took[k] / time.Duration(max(cycles[k], 1)) }
	t.Logf("TryLock (1 key) + Unlock: %v per cycle; TryLockMany (4 keys) + Unlock: %v per cycle; ratio %.2f (target ≤ 1.5)",
		per(0).Round(time.Microsecond), per(1).Round(time.Microsecond), float64(per(1))/float64(per(0)))
}
