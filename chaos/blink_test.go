package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// closeBound is how long a Client's Close may take whatever the masters do
// (Client.Close's bound: one node timeout plus its late window, then the
// connections are dropped), with room for a loaded machine.
const closeBound = time.Second

// closeGrace is how long Close waits for the calls in flight before it drops
// the connections, at the scenarios' node timeout.
const closeGrace = nodeTimeout + min(4*nodeTimeout, 250*time.Millisecond)

// A closing is one Close of a Client with a master frozen, on the
// Recorder's clock.
type closing struct {
	from, to time.Duration
	err      error
}

// blinks blackholes a random majority of the masters (3 of 5), on every
// client's paths, for 100–300 ms at a time, with half a TTL to a TTL between
// blinks, until the returned heal is called.
func (s *soak) blinks(seed uint64) (heal func()) {
	rng := rand.New(rand.NewPCG(seed, 0xb11c))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			nodes := randomSubset(rng, len(s.lab.Nodes), 3)
			s.m.onNodes(func(p *faultproxy.Proxy) { p.SetBlackhole(true) }, nodes...)
			time.Sleep(100*time.Millisecond + time.Duration(rng.Int64N(int64(200*time.Millisecond))))
			s.m.onNodes(func(p *faultproxy.Proxy) { p.SetBlackhole(false) }, nodes...)
			s.blinked.Add(1)
			pause(ctx, ttl/2+time.Duration(rng.Int64N(int64(ttl/2))))
		}
	}()
	return func() { cancel(); <-done; s.m.heal() }
}

// frozenClose freezes master n (SIGSTOP) under a brand-new Client on client
// c's paths, built over redis clients that never time out a read
// (ReadTimeout -1), while it holds renewed locks and keeps trying another;
// then closes that Client, which must return within closeBound. The master
// is resumed by the returned heal.
func (s *soak) frozenClose(n, c int) (heal func()) {
	rdbs := make([]redis.UniversalClient, len(s.m.proxies[c]))
	for i, p := range s.m.proxies[c] {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: -1})
	}
	cl, closeFn := freshClient(s.t, rdbs, s.m.opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 2 {
		lctx, lcancel := context.WithTimeout(ctx, attemptWait)
		if _, err := cl.Lock(lctx, fmt.Sprintf("frozen-close-%d", i)); err != nil {
			s.t.Logf("frozen at Close: Lock before the freeze: %v", err)
		}
		lcancel()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if _, err := cl.TryLock(ctx, "frozen-close-spin"); errors.Is(err, redlock.ErrClosed) || ctx.Err() != nil {
				return
			}
		}
	})
	s.each([]int{n}, func(n int) error { return s.lab.Nodes[n].Pause() })
	pause(ctx, ttl/2) // renewals and attempts now hang on the frozen master
	cl1 := closing{from: s.w.rec.Now()}
	cl1.err = closeWithin(closeFn)
	cl1.to = s.w.rec.Now()
	wg.Wait()
	s.closes = append(s.closes, cl1)
	return func() { s.each([]int{n}, func(n int) error { return s.lab.Nodes[n].Resume() }) }
}

// checkCloses fails t for every Close with a master frozen that failed or
// took longer than closeBound, unless the timer probe shows this process
// starved for at least half the excess over closeGrace meanwhile (as
// reportLate judges late loss signals); it returns how many Clients were
// closed so and the longest Close.
func (s *soak) checkCloses(t *testing.T, lag *lagLog) (int, time.Duration) {
	t.Helper()
	var worst time.Duration
	for _, c := range s.closes {
		took := c.to - c.from
		worst = max(worst, took)
		switch starved := lag.within(c.from, c.to); {
		case c.err != nil:
			t.Errorf("Close with a master frozen: %v", c.err)
		case took <= closeBound:
		case starved >= (took-closeGrace)/2:
			t.Logf("Close with a master frozen took %v while a probe timer fired %v late (CPU starvation)", took, starved)
		default:
			t.Errorf("Close with a master frozen took %v, want within %v (no probe timer later than %v meanwhile)", took, closeBound, starved)
		}
	}
	return len(s.closes), worst
}
