// End-to-end acceptance of the public API on the five-node lab.
package quorumlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testkit.Main(m)
}

// fiveNodeClients returns n independent Clients over one five-node lab, each
// with its own redis clients (as separate processes would have).
func fiveNodeClients(t *testing.T, n int, opts ...redlock.Option) []*redlock.Client {
	t.Helper()
	lab := redislab.Start(t, 5)
	lab.Trust(t, redlock.TrustStart)
	out := make([]*redlock.Client, n)
	for i := range out {
		// A roomy node timeout first (the suite runs under -race on two
		// shared cores); a test's own options come after it.
		c, err := redlock.New(lab.Clients(t), append([]redlock.Option{redlock.WithNodeTimeout(150 * time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		out[i] = c
	}
	return out
}

// holdLog checks mutual exclusion from inside the critical sections: the
// number of holders present, and the order of tokens.
type holdLog struct {
	mu        sync.Mutex
	inside    atomic.Int32
	overlaps  atomic.Int32
	lastToken int64
	regressed int
	holds     int
	probed    atomic.Int32
}

func (h *holdLog) enter(token int64) {
	if h.inside.Add(1) != 1 {
		h.overlaps.Add(1)
	}
	h.mu.Lock()
	if token <= h.lastToken {
		h.regressed++
	}
	h.lastToken = token
	h.holds++
	h.mu.Unlock()
}

func (h *holdLog) exit() { h.inside.Add(-1) }

// Zero overlapping holds over ≥ 1000 acquisitions of one key by 2
// independent clients with 16 goroutines waiting through Lock and Do, while
// 2 more goroutines probe with TryLock (which never jumps the queue, so its
// grants come only in gaps).
func TestNoOverlapUnderContention(t *testing.T) {
	// The node timeout is raised from its default: this test is about
	// exclusion, on a shared two-core machine.
	clients := fiveNodeClients(t, 2, redlock.WithTTL(2*time.Second), redlock.WithNodeTimeout(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log holdLog
	const waiters, perWaiter = 16, 64 // 1024 acquisitions
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for g := 0; g < waiters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWaiter; i++ {
				if err := acquireOnce(ctx, clients[g%2], g%2 == 0, &log); err != nil {
					errs <- fmt.Errorf("goroutine %d, acquisition %d: %w", g, i, err)
					return
				}
			}
		}()
	}
	probing, stopProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	for p := 0; p < 2; p++ {
		probes.Add(1)
		go func() { defer probes.Done(); probe(probing, clients[p], &log) }()
	}
	wg.Wait()
	stopProbes()
	probes.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d holds (%d by TryLock), %d overlaps, %d token regressions", log.holds, log.probed.Load(), log.overlaps.Load(), log.regressed)
	if log.holds < waiters*perWaiter {
		t.Errorf("holds = %d, want ≥ %d", log.holds, waiters*perWaiter)
	}
	if n := log.overlaps.Load(); n != 0 {
		t.Errorf("overlapping holds = %d, want 0", n)
	}
	if log.regressed != 0 {
		t.Errorf("token regressions = %d, want 0", log.regressed)
	}
}

func work(log *holdLog, token int64) {
	log.enter(token)
	time.Sleep(50 * time.Microsecond)
	log.exit()
}

// acquireOnce holds "hot" once, through Lock or through Do.
func acquireOnce(ctx context.Context, c *redlock.Client, viaDo bool, log *holdLog) error {
	if viaDo {
		return c.Do(ctx, "hot", func(ctx context.Context) error {
			l, ok := redlock.FromContext(ctx)
			if !ok {
				return errors.New("Do's ctx carries no Lock")
			}
			work(log, l.Token())
			return nil
		})
	}
	l, err := c.Lock(ctx, "hot")
	if err != nil {
		return err
	}
	work(log, l.Token())
	return l.Unlock(ctx)
}

// probe tries TryLock every millisecond until ctx ends, holding when granted.
func probe(ctx context.Context, c *redlock.Client, log *holdLog) {
	for ctx.Err() == nil {
		if l, err := c.TryLock(ctx, "hot"); err == nil {
			log.probed.Add(1)
			work(log, l.Token())
			l.Unlock(context.WithoutCancel(ctx))
		}
		time.Sleep(time.Millisecond)
	}
}

// Distinct keys never block one another.
func TestDistinctKeysAreIndependent(t *testing.T) {
	c := fiveNodeClients(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var locks []*redlock.Lock
	for i := 0; i < 50; i++ {
		l, err := c.TryLock(ctx, fmt.Sprintf("key-%d", i))
		if err != nil {
			t.Fatalf("TryLock key-%d while others are held: %v", i, err)
		}
		if l.Key() != fmt.Sprintf("key-%d", i) {
			t.Errorf("Key() = %q, want key-%d", l.Key(), i)
		}
		locks = append(locks, l)
	}
	for _, l := range locks {
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock %s: %v", l.Key(), err)
		}
	}
}

// The lifecycle in one place: a held lock is valid and open, Unlock ends it,
// and nothing the library started is left running after Close.
func TestLifecycle(t *testing.T) {
	c := fiveNodeClients(t, 1, redlock.WithTTL(time.Second))[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, "life")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if l.Err() != nil || !time.Now().Before(l.Until()) || l.Token() < 1 {
		t.Fatalf("fresh lock: Err=%v, Until in %v, Token=%d", l.Err(), time.Until(l.Until()), l.Token())
	}
	select {
	case <-l.Done():
		t.Fatal("Done closed while held")
	default:
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	<-l.Done()
	if !errors.Is(l.Err(), redlock.ErrNotHeld) {
		t.Errorf("Err after Unlock = %v, want ErrNotHeld", l.Err())
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The lab's own goroutines (process waits, redis pool reapers) live until
	// the test's cleanup; anything else is the library's.
	if err := goleak.Find(append(testkit.LeakIgnores(),
		goleak.IgnoreAnyFunction("github.com/seed818c56a1/quorumlock/internal/redislab.(*process).reap"))...); err != nil {
		t.Errorf("goroutines left after Unlock and Close: %v", err)
	}
}
