package redlocktest_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/redlocktest"
)

// A hold is one holder's time with the lock, as it saw it: from the
// acquisition's return to the start of its Unlock.
type hold struct{ from, to time.Time }

// overlaps counts the pairs of holds that intersect.
func overlaps(holds []hold) int {
	slices.SortFunc(holds, func(a, b hold) int { return a.from.Compare(b.from) })
	n := 0
	for i := range holds {
		for j := i + 1; j < len(holds) && holds[j].from.Before(holds[i].to); j++ {
			n++
		}
	}
	return n
}

// Three processes (Clients) take one lock in turn
// while the masters crash, restart empty — a majority at once, too —
// freeze and slow down. No two holds may overlap.
func TestMutualExclusionUnderFaults(t *testing.T) {
	t.Parallel()
	masters := redlocktest.Start(t, 5)
	ctx, stop := context.WithTimeout(ctxFor(t, time.Minute), 5*time.Second)
	defer stop()
	var mu sync.Mutex
	var holds []hold
	var wg sync.WaitGroup
	for range 3 {
		locks := masters.Client(t, redlock.WithTTL(500*time.Millisecond), redlock.WithAutoRenew(false))
		wg.Go(func() {
			for ctx.Err() == nil {
				if h, ok := holdOnce(ctx, locks); ok {
					mu.Lock()
					holds = append(holds, h)
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() { injectFaults(ctx, masters) })
	wg.Wait()
	if len(holds) < 5 {
		t.Fatalf("%d holds in 5 s; want the workers to make progress", len(holds))
	}
	if n := overlaps(holds); n > 0 {
		t.Fatalf("%d overlapping pairs among %d holds", n, len(holds))
	}
	t.Logf("%d holds, no overlap", len(holds))
}

// holdOnce tries to take the lock — workers poll, so that a lock a restart
// wrongly freed would be taken at once — keeps it for tens of milliseconds,
// far within its validity, and releases it.
func holdOnce(ctx context.Context, locks *redlock.Client) (hold, bool) {
	l, err := locks.TryLock(ctx, "job")
	if err != nil {
		time.Sleep(time.Duration(5+rand.IntN(10)) * time.Millisecond)
		return hold{}, false
	}
	h := hold{from: time.Now()}
	time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
	// Past its validity the lock is no longer this holder's to count.
	if h.to = time.Now(); h.to.After(l.Until()) {
		h.to = l.Until()
	}
	l.Unlock(context.WithoutCancel(ctx))
	return h, true
}

// injectFaults makes one fault after another until ctx ends, in a cycle:
// a minority crash and restart, a freeze, a slow master, and a majority
// restarted empty at once — at most one of those a second or so, since
// each takes the lock out of service for the guard.
func injectFaults(ctx context.Context, masters *redlocktest.Cluster) {
	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for k := 0; pause(300 * time.Millisecond); k++ {
		i := rand.IntN(5)
		switch k % 4 {
		case 0:
			masters.Kill(i)
			pause(100 * time.Millisecond)
			masters.Restart(i)
		case 1:
			masters.Freeze(i)
			pause(150 * time.Millisecond)
			masters.Thaw(i)
		case 2:
			masters.SetLatency(i, 30*time.Millisecond)
			pause(200 * time.Millisecond)
			masters.SetLatency(i, 0)
		case 3: // a majority restarts empty at once
			for _, j := range rand.Perm(5)[:3] {
				masters.Restart(j)
			}
		}
	}
}

// Clusters are independent, and one Cluster's faults may come from many
// goroutines at once; afterwards every master serves again.
func TestParallelFaults(t *testing.T) {
	for _, name := range []string{"a", "b", "c"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			masters := redlocktest.Start(t, 3)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					for k := range 20 {
						i := (g + k) % 3
						switch k % 5 {
						case 0:
							masters.Kill(i)
						case 1:
							masters.Restart(i)
						case 2:
							masters.Freeze(i)
						case 3:
							masters.Thaw(i)
						case 4:
							masters.SetLatency(i, time.Duration(k)*time.Microsecond)
						}
					}
				})
			}
			wg.Wait()
			ctx := ctxFor(t, 10*time.Second)
			for i := range 3 {
				masters.Restart(i)
				masters.SetLatency(i, 0)
				if err := masters.Clients()[i].Ping(ctx).Err(); err != nil {
					t.Errorf("master %d after the faults: PING = %v", i, err)
				}
			}
		})
	}
}
