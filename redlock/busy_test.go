package redlock_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Renewal degrades gracefully on a busy host (issue 25): 1,000
// auto-renewed locks (TTL 3 s, node timeout 250 ms, five masters) are
// taken and then held for 10 s while three processes spin on the cores,
// so that the client and the masters get a fraction of a core each and
// are descheduled for tens of milliseconds at a time. Not one lock may be
// lost, whatever else loads the host: the test never skips on load (a skip
// under CI would hide the very failure it is for). It logs the load
// average and the longest stretch this process went unscheduled, so that
// a failure shows what the host was doing. BUSY_LOCKS=10000 runs the
// outside check's size (about 1.5 minutes; `go test -run
// TestRenewalsSurviveCPUHogs ./redlock`).
func TestRenewalsSurviveCPUHogs(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30 s of renewals under CPU pressure")
	}
	const hold = 10 * time.Second
	n := 1000
	if v := os.Getenv("BUSY_LOCKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("BUSY_LOCKS=%q: want a count of locks", v)
		}
	}
	var lost atomic.Int64
	obs := &lossCounter{lost: &lost, fails: map[string]int{}}
	c, _, _ := lab(t, 5, redlock.WithTTL(3*time.Second), redlock.WithNodeTimeout(250*time.Millisecond),
		redlock.WithObserver(obs))
	stalls := watchStalls(t)
	testkit.BurnCPU(t, 3)
	ctx := ctxFor(t, 2*time.Minute+time.Duration(n)*10*time.Millisecond)
	start := time.Now()
	locks := lockMany(t, ctx, c, "busy:", n)
	t.Logf("took %d locks in %v", n, time.Since(start).Round(time.Millisecond))
	select {
	case <-time.After(hold):
	case <-ctx.Done():
	}
	held, first := 0, error(nil)
	for _, l := range locks {
		if err := l.Err(); err != nil {
			first = err
			continue
		}
		held++
	}
	stall, load := stalls(), loadAverage(t)
	t.Logf("%d of %d held after %v; the longest this process went unscheduled: %v; load average %.1f",
		held, n, hold, stall.Round(time.Millisecond), load)
	if held != n {
		t.Errorf("%d of %d locks lost under CPU pressure (%d losses observed); one: %v", n-held, n, lost.Load(), first)
		obs.mu.Lock()
		for cause, k := range obs.fails {
			t.Logf("%d failed renewals: %s", k, cause)
		}
		obs.mu.Unlock()
	}
	for _, l := range locks {
		l.Unlock(ctx)
	}
}

// lockMany takes n locks, prefix followed by 0..n-1, with 16 goroutines.
func lockMany(t *testing.T, ctx context.Context, c *redlock.Client, prefix string, n int) []*redlock.Lock {
	t.Helper()
	locks := make([]*redlock.Lock, n)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				l, err := c.Lock(ctx, prefix+strconv.Itoa(i))
				if err != nil {
					errs <- err
					return
				}
				locks[i] = l
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Lock: %v", err)
	}
	return locks
}

// watchStalls measures, until the returned function is called, the longest
// gap between the ticks of a 10 ms ticker: how long this process went
// without the CPU at a stretch.
func watchStalls(t *testing.T) func() time.Duration {
	var longest atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				now := time.Now()
				if gap := now.Sub(last); gap > time.Duration(longest.Load()) {
					longest.Store(int64(gap))
				}
				last = now
			}
		}
	})
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	t.Cleanup(stop)
	return func() time.Duration {
		stop()
		return time.Duration(longest.Load())
	}
}

// loadAverage is the host's 1-minute load average.
func loadAverage(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Logf("no load average: %v", err)
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// lossCounter counts the losses the observers are told of, and the
// failed renewals by their error (its first 160 bytes).
type lossCounter struct {
	redlock.NopObserver
	lost  *atomic.Int64
	mu    sync.Mutex
	fails map[string]int
}

func (o *lossCounter) Lost(context.Context, string, error) { o.lost.Add(1) }

var anyKey = regexp.MustCompile(`busy:[0-9]+`)

func (o *lossCounter) Renewed(_ context.Context, _ string, err error) {
	if err == nil || o.fails == nil {
		return
	}
	msg := anyKey.ReplaceAllString(err.Error(), "busy:N")
	msg = msg[:min(len(msg), 160)]
	o.mu.Lock()
	o.fails[msg]++
	o.mu.Unlock()
}
