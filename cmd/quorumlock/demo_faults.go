package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// killedNode is the embedded node the demo's faults kill and restarts.
const killedNode = 1

// A demoFaults is what happens to the buyers while they buy: an embedded node is
// killed and, a TTL later, restarted empty (the delayed restart Redlock
// needs); and another process keeps the lock for 1.5 TTL — the watchdog
// must renew it — then crashes without releasing it, and a buyer must take
// over once its lease expires. Its methods are safe for concurrent use.
type demoFaults struct {
	mu                    sync.Mutex
	killedAt, restartedAt time.Duration // since the start; 0 if it did not happen
	restartErr            error
	held                  time.Duration // how long the crashing process held the lock
	renewals              int           // renewals seen while it held it
	holdErr               error         // why it could not take or keep the lock
	crashedAt             time.Time     // zero until it crashed
	takeover              time.Duration // from the crash to the next buyer's hold
}

// timing returns when the node is killed and restarted, and when the
// crashing process asks for the lock, as offsets from the start. It asks
// early, at a quarter of the run: it waits its turn behind the buyers.
func (d *demoRun) timing() (kill, restart, crash time.Duration) {
	kill = d.duration / 5
	return kill, kill + d.ttl + d.ttl/10, d.duration / 4
}

func (s *demoFaults) play(ctx context.Context, d *demoRun) {
	var wg sync.WaitGroup
	if d.emb != nil {
		wg.Go(func() { s.killAndRestart(ctx, d) })
	}
	wg.Go(func() { s.crashingHolder(ctx, d) })
	wg.Wait()
}

func (s *demoFaults) killAndRestart(ctx context.Context, d *demoRun) {
	kill, restart, _ := d.timing()
	if sleepCtx(ctx, time.Until(d.start.Add(kill))) != nil {
		return
	}
	d.emb.kill(killedNode)
	s.set(func() { s.killedAt = time.Since(d.start) })
	d.progress("node %d (%s) killed", killedNode, d.emb.addrs[killedNode])
	if sleepCtx(ctx, time.Until(d.start.Add(restart))) != nil {
		return
	}
	err := d.emb.restart(killedNode)
	s.set(func() { s.restartedAt, s.restartErr = time.Since(d.start), err })
	if err != nil {
		d.progress("node %d not restarted: %v", killedNode, err)
		return
	}
	d.progress("node %d restarted empty, more than a TTL after it was killed", killedNode)
}

// crashingHolder is another process: at the faults' time it takes the
// lock, keeps it for 1.5 TTL while its watchdog renews it, then crashes —
// its Client closes without releasing, so the lock stays on the nodes until
// its lease ends.
func (s *demoFaults) crashingHolder(ctx context.Context, d *demoRun) {
	_, _, at := d.timing()
	if sleepCtx(ctx, time.Until(d.start.Add(at))) != nil {
		return
	}
	client, err := redlock.New(d.conns.universal(), append(d.options(), d.hist.as("crashing process")...)...)
	if err != nil {
		s.set(func() { s.holdErr = err })
		return
	}
	defer client.Close()
	l, err := client.Lock(ctx, d.key)
	switch {
	case ctx.Err() != nil:
		return // the demo is over
	case err != nil:
		s.set(func() { s.holdErr = err })
		return
	}
	hold := d.ttl * 3 / 2
	d.progress("another process takes the lock for %v, longer than its TTL: its watchdog renews it", hold)
	leave := d.check.enter()
	renewals, err := watch(ctx, l, hold)
	leave()
	if err != nil && !errors.Is(err, redlock.ErrLockLost) {
		return // the demo is over
	}
	s.set(func() { s.held, s.renewals, s.holdErr, s.crashedAt = hold, renewals, err, time.Now() })
	client.Close()
	d.progress("it crashed without releasing the lock (renewed %d times); the lease expires within %v", renewals, d.ttl)
}

// watch keeps l for hold and counts the watchdog's renewals, seen as Until
// moving forward. It returns early with the reason if the lock ends or ctx
// does.
func watch(ctx context.Context, l *redlock.Lock, hold time.Duration) (int, error) {
	tick := time.NewTicker(max(hold/20, time.Millisecond))
	defer tick.Stop()
	end := time.NewTimer(hold)
	defer end.Stop()
	last, n := l.Until(), 0
	for {
		select {
		case <-tick.C:
			if u := l.Until(); u.After(last) {
				last, n = u, n+1
			}
		case <-l.Done():
			return n, l.Err()
		case <-ctx.Done():
			return n, ctx.Err()
		case <-end.C:
			return n, nil
		}
	}
}

// entered notes a buyer's hold, to time the takeover after the crash.
func (s *demoFaults) entered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.crashedAt.IsZero() && s.takeover == 0 {
		s.takeover = time.Since(s.crashedAt)
	}
}

func (s *demoFaults) set(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}
