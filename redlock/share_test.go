package redlock_test

import "testing"

// requireFairShares fails t for every worker of holds (holds per worker,
// over a timed run) that held less than a quarter of its fair share, or
// never: how many holds fit in a run depends on the host's load — a fixed
// count such as "≥ 10 each" fails on a busy 2-core machine — but no worker
// may be starved of its share, whatever the load.
func requireFairShares(t *testing.T, what string, holds []int) {
	t.Helper()
	total := 0
	for _, n := range holds {
		total += n
	}
	for w, n := range holds {
		if n < 1 || n*4*len(holds) < total {
			t.Errorf("%s %d held %d times of %d in all, want ≥ a quarter of its share (%d) and ≥ 1",
				what, w, n, total, total/len(holds)/4)
		}
	}
}
