package chaos_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// splitTTL is the lease of the two holders of a split semaphore: longer
// than the prober's (ttl), as in issue 25, so that a guard learnt from
// the prober's own grants would be too short.
const splitTTL = 4 * ttl

// permitSplit is the fault of issue 25, in the soak: two holders of a
// semaphore of permitLimit permits each reach one shared master and half
// of the others, so that every other master holds one holder's permit and
// grants the other; the shared master is restarted empty; a fresh Client
// with the default restart guard and a shorter TTL then tries the
// semaphore again and again until both leases are over. Every hold goes
// into the history: a grant of a holder's permit is an overlap. The
// returned heal waits for the holders and the prober, and closes them.
func (s *soak) permitSplit() (heal func()) {
	n := len(s.lab.Nodes)
	order := randomSubset(s.rng, n, n)
	shared, rest := order[0], order[1:]
	s.hit = append(s.hit, shared) // the master the report draws the fault on
	name := fmt.Sprintf("split%d", len(s.episodes))
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	var holders []*redlock.Lock
	for _, half := range [][]int{rest[:len(rest)/2], rest[len(rest)/2:]} {
		c, closeC := s.reachOnly(append([]int{shared}, half...))
		closers = append(closers, closeC)
		if l := acquireWithin(c, name, 2*time.Second); l != nil {
			holders = append(holders, l)
		}
	}
	if len(holders) < 2 {
		for _, l := range holders {
			l.Unlock(context.Background())
		}
		return closeAll
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, l := range holders {
		wg.Go(func() {
			s.w.rec.Hold(ctx, fmt.Sprintf("split-h%d", i+1), l, func(ctx context.Context) { pause(ctx, time.Until(l.Until())) })
		})
	}
	s.lab.Restart(s.t, true, shared)
	s.splits.Add(1)
	x, closeX := s.reachOnly(order)
	wg.Go(func() {
		for time.Now().Before(holders[0].Until()) || time.Now().Before(holders[1].Until()) {
			if l, err := x.TryAcquire(ctx, name, permitLimit, redlock.WithAutoRenew(false)); err == nil {
				s.splitGrants.Add(1)
				s.w.rec.Hold(ctx, "split-x", l, func(context.Context) {})
			}
			pause(ctx, 10*time.Millisecond)
		}
	})
	return func() { wg.Wait(); cancel(); closeX(); closeAll() }
}

// acquireWithin tries the split semaphore name through c until it holds a
// permit, for at most d; nil if it did not.
func acquireWithin(c *redlock.Client, name string, d time.Duration) *redlock.Lock {
	for end := time.Now().Add(d); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l, err := c.TryAcquire(ctx, name, permitLimit, redlock.WithTTL(splitTTL), redlock.WithAutoRenew(false))
		cancel()
		if err == nil {
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// reachOnly returns a brand-new Client with the default restart guard
// whose redis clients reach the given masters directly, and every other
// master through a proxy refusing every connection; and how to close it
// and them.
func (s *soak) reachOnly(reach []int) (*redlock.Client, func()) {
	reached := map[int]bool{}
	for _, i := range reach {
		reached[i] = true
	}
	nodes := make([]redis.UniversalClient, len(s.lab.Nodes))
	var proxies []*faultproxy.Proxy
	for i, nd := range s.lab.Nodes {
		addr := nd.Addr()
		if !reached[i] {
			p := faultproxy.Start(s.t, addr)
			p.SetRefuse(true)
			proxies = append(proxies, p)
			addr = p.Addr()
		}
		nodes[i] = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	}
	closeAll := func() {
		for _, n := range nodes {
			n.Close()
		}
		for _, p := range proxies {
			p.Close()
		}
	}
	c, err := redlock.New(nodes, labOptions(nil)...)
	if err != nil {
		closeAll()
		s.t.Fatalf("split semaphore: New: %v", err)
	}
	return c, func() { c.Close(); closeAll() }
}
