package bench

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

var (
	flagRenewLocks = flag.Int("renew.locks", 10000, "TestRenewalScale: locks held by one Client")
	flagRenewTTL   = flag.Duration("renew.ttl", 3*time.Second, "TestRenewalScale: their TTL")
	flagRenewHold  = flag.Duration("renew.hold", 30*time.Second, "TestRenewalScale: how long they are held")
	flagRenewNodeT = flag.Duration("renew.nodetimeout", 0, "TestRenewalScale: the Client's node timeout (0: the library's default)")
	flagRenewHogs  = flag.Int("renew.hogs", 0, "TestRenewalScale: processes spinning on the CPU beside it, from before the first lock (issue 25: 3)")
)

// TestRenewalScale holds many auto-renewed locks on one Client for a while
// and reports what the watchdog costs: extend script calls per renewal
// period (the masters' EVALSHA count), the client's CPU per period, and its
// memory per held lock. It fails if a lock is lost or if the calls exceed
// 1.2 × nodes × ⌈locks/100⌉ per period (issue 10). With -renew.hogs, that
// many processes spin on the CPU throughout, as on a busy host (issue 25).
func TestRenewalScale(t *testing.T) {
	lab := startLab(t)
	testkit.BurnCPU(t, *flagRenewHogs)
	nodes := lab.Clients(t)
	obs := &renewalObserver{renewFails: map[string]int{}, nodeFails: map[string]int{}}
	opts := []redlock.Option{redlock.WithTTL(*flagRenewTTL), redlock.WithObserver(obs)}
	if *flagRenewNodeT > 0 {
		opts = append(opts, redlock.WithNodeTimeout(*flagRenewNodeT))
	}
	c := newQuorumlock(t, nodes, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), *flagRenewHold+5*time.Minute)
	defer cancel()

	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	obs.reset()
	acqStart := time.Now()
	locks := acquireMany(t, ctx, c, *flagRenewLocks)
	acqTook := time.Since(acqStart)
	lostAcquiring := 0
	for _, l := range locks {
		if l.Err() != nil {
			lostAcquiring++
		}
	}
	t.Logf("acquiring %d locks with 16 goroutines took %v; %d of them already lost by then", len(locks), acqTook.Round(time.Millisecond), lostAcquiring)
	obs.log(t, "while acquiring")
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)

	obs.reset()
	calls0, cpu0, start := scriptTotal(t, nodes), processCPU(), time.Now()
	select {
	case <-time.After(*flagRenewHold):
	case <-ctx.Done():
	}
	calls1, cpu1, held := scriptTotal(t, nodes), processCPU(), time.Since(start)

	lost := 0
	causes := map[string]int{}
	for _, l := range locks {
		if err := l.Err(); err != nil {
			lost++
			msg := err.Error()
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			causes[msg]++
		}
	}
	period := *flagRenewTTL / 3
	periods := float64(held) / float64(period)
	perPeriod := float64(calls1-calls0) / periods
	limit := 1.2 * float64(len(nodes)) * float64((len(locks)+99)/100)
	t.Logf("renewal scale: %d locks, TTL %v, held %v on %d masters, %d CPU hogs, load average %s", len(locks), *flagRenewTTL, held.Round(time.Millisecond), len(nodes), *flagRenewHogs, loadavg())
	t.Logf("  extend script calls per renewal period (%v): %.0f (limit %.0f; unbatched: %d)", period, perPeriod, limit, len(nodes)*len(locks))
	t.Logf("  client CPU per renewal period: %v (%.1f%% of one core)", (cpu1-cpu0)/time.Duration(periods), 100*float64(cpu1-cpu0)/float64(held))
	t.Logf("  client heap per held lock: %d bytes", int64(m1.HeapAlloc-m0.HeapAlloc)/int64(len(locks)))
	t.Logf("  locks lost: %d", lost)
	shown := 0
	for msg, n := range causes {
		if shown++; shown > 5 {
			t.Logf("    … %d other causes", len(causes)-5)
			break
		}
		t.Logf("    %d× %s", n, msg)
	}
	obs.log(t, "while held")
	if lost > 0 {
		t.Errorf("%d of %d locks lost", lost, len(locks))
	}
	if perPeriod > limit {
		t.Errorf("%.0f extend calls per renewal period, want ≤ %.0f", perPeriod, limit)
	}
	for _, l := range locks {
		l.Unlock(ctx)
	}
}

// acquireMany takes n distinct locks with 16 goroutines.
func acquireMany(t *testing.T, ctx context.Context, c *redlock.Client, n int) []*redlock.Lock {
	t.Helper()
	locks := make([]*redlock.Lock, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				l, err := c.Lock(ctx, "renewal-scale:"+strconv.Itoa(i))
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				locks[i] = l
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("acquiring %d locks: %v", n, firstErr)
	}
	return locks
}

// scriptTotal is the scripts the masters ran so far, all together.
func scriptTotal(t *testing.T, nodes []redis.UniversalClient) int64 {
	var total int64
	for _, n := range redislab.ScriptCalls(t, nodes) {
		total += n
	}
	return total
}

// renewalObserver counts what the watchdog reports while the locks are held:
// renewals and their failures, node calls that failed, losses.
type renewalObserver struct {
	redlock.NopObserver
	mu                  sync.Mutex
	renewed, lost       int
	renewFails          map[string]int
	nodeFails           map[string]int
	firstLost, lastLost time.Duration
	start               time.Time
}

func (o *renewalObserver) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.renewed, o.lost, o.start = 0, 0, time.Now()
	clear(o.renewFails)
	clear(o.nodeFails)
}

func (o *renewalObserver) Renewed(_ context.Context, _ string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err == nil {
		o.renewed++
		return
	}
	o.renewFails[shorten(err.Error())]++
}

func (o *renewalObserver) Lost(context.Context, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := time.Since(o.start)
	if o.lost == 0 {
		o.firstLost = at
	}
	o.lost++
	o.lastLost = at
}

func (o *renewalObserver) NodeFailed(_ context.Context, op, _ string, v redlock.NodeVote) {
	o.mu.Lock()
	defer o.mu.Unlock()
	msg := "?"
	if v.Err != nil {
		msg = shorten(v.Err.Error())
	}
	o.nodeFails[fmt.Sprintf("%s node %d: %s", op, v.Node, msg)]++
}

func (o *renewalObserver) log(t *testing.T, when string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Logf("  %s: %d renewals succeeded, %d failed; %d losses reported (first at %v, last at %v)",
		when, o.renewed, sum(o.renewFails), o.lost, o.firstLost.Round(time.Millisecond), o.lastLost.Round(time.Millisecond))
	for msg, n := range o.renewFails {
		t.Logf("    renewal failed %d×: %s", n, msg)
	}
	for msg, n := range o.nodeFails {
		t.Logf("    node call failed %d×: %s", n, msg)
	}
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// shorten drops the addresses and long tails of an error message, so that
// the same failure on different keys counts once.
func shorten(s string) string {
	s = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(s, `"…"`)
	s = regexp.MustCompile(`\(127\.0\.0\.1:\d+\)`).ReplaceAllString(s, "")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}
