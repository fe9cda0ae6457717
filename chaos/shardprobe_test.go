package chaos_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// probe makes a fault bite: a brand-new key on shard (one per episode, so
// that nothing of it predates the episode) is locked through one random
// client, renewed, and held until the returned stop, while another client
// tries it again and again (holding it a few milliseconds when it wins),
// every hold recorded. A fault that loses the probe's lease where it was
// granted shows as an overlap, whatever the other holders happen to do at
// that moment. It returns once the probe is held, or after attemptWait.
func (s *shardSoak) probe(shard int) (key string, stop func()) {
	key = s.lab.Members[0].Shards[shard].Keys(fmt.Sprintf("probe%d-", len(s.episodes)), 1)[0]
	seats := randomSubset(s.rng, len(s.seats), 2)
	holder, rival := s.seats[seats[0]], s.seats[seats[1]]
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(held)
		c, done := holder.take()
		defer done()
		actx, acancel := context.WithTimeout(ctx, attemptWait)
		l, err := c.Lock(actx, key, redlock.WithAutoRenew(true))
		acancel()
		if err != nil {
			return
		}
		held <- struct{}{}
		s.rec.Hold(ctx, "probe", l, func(ctx context.Context) { <-ctx.Done() })
	})
	select {
	case _, ok := <-held:
		if ok {
			s.probes++
		}
	case <-time.After(attemptWait + time.Second):
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			c, done := rival.take()
			if l, err := c.TryLock(ctx, key, redlock.WithAutoRenew(false)); err == nil {
				s.rec.Hold(ctx, "probe-rival", l, func(ctx context.Context) { pause(ctx, 5*time.Millisecond) })
			}
			done()
			pause(ctx, tryPace)
		}
	})
	return key, func() { cancel(); wg.Wait() }
}
