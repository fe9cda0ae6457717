package redlock_test

import (
	"context"
	"testing"
)

// cycleAllocBudget bounds the allocations of one uncontended TryLock and
// Unlock on five real masters, every goroutine of the process counted
// (the calls' late answers, the watchdog's schedule and go-redis's
// included). A cycle made about 270 when this was written (issue 26; 460
// before its changes to the client, the transport and the scripts): the
// budget fails a change that doubles them, not one that adds a few.
const cycleAllocBudget = 500

// TestCycleAllocations pins the allocation budget of an uncontended cycle:
// TryLock, then Unlock, of keys nobody else holds.
func TestCycleAllocations(t *testing.T) {
	c, _, _ := lab(t, 5)
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "allocs:" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	i := 0
	cycle := func() {
		key := keys[i%len(keys)]
		i++
		l, err := c.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("TryLock(%q): %v", key, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock(%q): %v", key, err)
		}
	}
	for range 50 { // the pools, the script caches, the nodes' starts
		cycle()
	}
	got := testing.AllocsPerRun(200, cycle)
	t.Logf("%.0f allocations per TryLock+Unlock (budget %d)", got, cycleAllocBudget)
	if got > cycleAllocBudget {
		t.Errorf("an uncontended TryLock+Unlock made %.0f allocations, over the budget of %d", got, cycleAllocBudget)
	}
}
