package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A contention is a set of holders competing for one key: each goroutine
// of each client loops Lock (or TryLock), work for a random while, Unlock —
// recording every hold — until stopped. Each client is a seat, whose Client
// a soak may replace by a brand-new one while the holders run.
type contention struct {
	rec        *chaos.Recorder
	seats      []*seat
	goroutines int // per client, each looping Lock
	tryers     int // per client, each looping TryLock (which never queues)
	key        string
	kind       holdKind
	maxWork    time.Duration // each hold works a random time in [0, maxWork)
	many       []string      // kindMany's keys; manyKeys when nil
	opts       []redlock.Option
	// store, when set, is the resource: each writer's hold writes to it
	// as it starts and as it ends (fencedWrite).
	store *chaos.FencedStore
	// pauseEvery, when set, makes one writer's hold in pauseEvery (at
	// random) a paused process's: taken with renewal off, its holder
	// sleeps past Until(), deaf to the loss signal, then writes.
	pauseEvery int

	held     atomic.Int32 // holds in progress
	attempts atomic.Int64 // Lock calls that gave up at their deadline, and refused TryLocks
	mu       sync.Mutex
	errs     []error // unexpected errors, reported by stop
}

// attemptWait bounds each Lock call, so that holders keep trying through a
// fault that blocks acquisition for a while.
const attemptWait = time.Second

// start runs the holders until the returned stop is called (or the test
// ends); stop waits for all of them and fails t on unexpected errors.
func (w *contention) start(t *testing.T, seed uint64) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for ci, s := range w.seats {
		for g := range w.goroutines + w.tryers {
			rng := rand.New(rand.NewPCG(seed, uint64(ci*1000+g)))
			name := fmt.Sprintf("c%d/g%d", ci, g)
			try := g >= w.goroutines
			wg.Go(func() { w.holder(ctx, s, name, rng, try) })
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, err := range w.errs[:min(5, len(w.errs))] {
				t.Errorf("holder: %v", err)
			}
		})
	}
	t.Cleanup(stop) // after a Fatal, before the clients close
	return stop
}

func (w *contention) holder(ctx context.Context, s *seat, name string, rng *rand.Rand, try bool) {
	for ok := true; ok && ctx.Err() == nil; {
		c, done := s.take()
		ok = w.turn(ctx, c, name, rng, try)
		done()
	}
}

// turn makes one acquisition through c and, if it won, one hold. It records
// unexpected errors, and returns false after one from Lock.
func (w *contention) turn(ctx context.Context, c *redlock.Client, name string, rng *rand.Rand, try bool) bool {
	shared := w.kind == kindReadWrite && rng.IntN(4) > 0 // three readers to a writer
	paused := w.pauseEvery > 0 && !shared && rng.IntN(w.pauseEvery) == 0
	opts := w.opts
	if paused {
		opts = append(slices.Clone(w.opts), redlock.WithAutoRenew(false))
	}
	l, err := w.acquire(ctx, c, rng, try, shared, opts)
	if err != nil {
		if !errors.Is(err, redlock.ErrNotObtained) {
			w.fail(fmt.Errorf("%s: Lock: %w", name, err))
			return false
		}
		w.attempts.Add(1)
		return true
	}
	work := time.Duration(rng.Int64N(int64(w.maxWork) + 1))
	hold := w.rec.Hold
	if shared {
		hold = w.rec.HoldShared
	}
	err = hold(ctx, name, l, func(hctx context.Context) {
		w.held.Add(1)
		defer w.held.Add(-1)
		w.fencedWrite(l, shared)
		switch {
		case paused:
			// Paused past the end of its validity, and one to two TTLs
			// more: the others take the lock and write meanwhile, so the
			// store must refuse the write it makes when it wakes.
			pause(ctx, time.Until(l.Until())+ttl+time.Duration(rng.Int64N(int64(ttl))))
		default:
			pause(hctx, work)
			if hctx.Err() != nil && ctx.Err() == nil && w.store != nil && rng.IntN(2) == 0 {
				// Told of the loss, this holder goes on as one paused
				// past it would, and writes late.
				pause(ctx, time.Duration(rng.Int64N(int64(ttl))))
			}
		}
		w.fencedWrite(l, shared)
	})
	// A loss is recorded by Hold and judged by the checker; an Unlock that
	// no majority confirmed either way is a fault's normal outcome.
	var qe *redlock.QuorumError
	if err != nil && !errors.Is(err, redlock.ErrLockLost) && !errors.As(err, &qe) {
		w.fail(fmt.Errorf("%s: Unlock: %w", name, err))
	}
	return true
}

// fencedWrite makes a holder's write under l to the contention's store, if
// it has one: one write per key of l under that key's token (a permit's
// under <name>#<permit>, as the Recorder names it); a reader writes
// nothing.
func (w *contention) fencedWrite(l *redlock.Lock, shared bool) {
	switch {
	case w.store == nil || shared:
	case l.Permit() >= 0:
		w.store.Write(fmt.Sprintf("%s#%d", l.Key(), l.Permit()), l.Token())
	default:
		for _, k := range l.Keys() {
			w.store.Write(k, l.TokenOf(k))
		}
	}
}

// A holdKind is what a contention's holders take.
type holdKind int

const (
	kindLock      holdKind = iota // Lock of key
	kindMany                      // LockMany of 1–3 of manyKeys, drawn at random
	kindReadWrite                 // RLock of key, or now and then Lock
	kindPermit                    // Acquire of one of permitLimit permits of key
)

// The kinds' parameters: LockMany's keys, and the semaphore's limit.
var manyKeys = []string{"m0", "m1", "m2", "m3"}

const permitLimit = 2

// acquire makes one acquisition of w's kind — shared, for a reader — bounded
// by attemptWait, or one Try attempt after a short pause.
func (w *contention) acquire(ctx context.Context, c *redlock.Client, rng *rand.Rand, try, shared bool, opts []redlock.Option) (*redlock.Lock, error) {
	if try {
		pause(ctx, tryPace)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, attemptWait)
		defer cancel()
	}
	switch {
	case w.kind == kindMany:
		keys := slices.Clone(manyKeys)
		if w.many != nil {
			keys = slices.Clone(w.many)
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		keys = keys[:1+rng.IntN(3)]
		if try {
			return c.TryLockMany(ctx, keys, opts...)
		}
		return c.LockMany(ctx, keys, opts...)
	case w.kind == kindPermit && try:
		return c.TryAcquire(ctx, w.key, permitLimit, opts...)
	case w.kind == kindPermit:
		return c.Acquire(ctx, w.key, permitLimit, opts...)
	case shared && try:
		return c.TryRLock(ctx, w.key, opts...)
	case shared:
		return c.RLock(ctx, w.key, opts...)
	case try:
		return c.TryLock(ctx, w.key, opts...)
	}
	return c.Lock(ctx, w.key, opts...)
}

// tryPace is the pause before each TryLock of a contention.
const tryPace = 2 * time.Millisecond

func (w *contention) fail(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

// waitHeld waits until some holder is inside its critical section: a fault
// injected then lands mid-lease.
func (w *contention) waitHeld(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, "a holder inside its critical section", func() bool { return w.held.Load() > 0 })
}

// waitResumed waits for a hold that started after offset since, when the
// fault was cleared, and logs how long service took to resume.
func (w *contention) waitResumed(t *testing.T, since time.Duration, what string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "an acquisition after "+what, func() bool { return holdsSince(w.rec, since) > 0 })
	first := w.rec.Now()
	for _, h := range w.rec.History() {
		if h.Start >= since {
			first = min(first, h.Start)
		}
	}
	t.Logf("service resumed %v after %s", (first - since).Round(time.Millisecond), what)
}

// holdsSince counts the holds that started after offset at.
func holdsSince(rec *chaos.Recorder, at time.Duration) int {
	n := 0
	for _, h := range rec.History() {
		if h.Start >= at {
			n++
		}
	}
	return n
}

// pause waits for d or until ctx ends: a holder's simulated work, or the
// time a fault lasts. It is never an assertion.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// longHold acquires key "long" through c with auto-renew on and holds it
// until the loss is signalled (or ctx ends), recording the hold. The channel
// yields Unlock's error once the hold is recorded.
func longHold(t *testing.T, ctx context.Context, rec *chaos.Recorder, c *redlock.Client) <-chan error {
	t.Helper()
	l, err := c.Lock(ctx, "long", redlock.WithAutoRenew(true))
	if err != nil {
		t.Fatalf("Lock long: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- rec.Hold(ctx, "long", l, func(ctx context.Context) { <-ctx.Done() })
	}()
	return done
}

// requireLoss waits for the long hold to end and fails t unless it ended
// with ErrLockLost.
func requireLoss(t *testing.T, done <-chan error, within time.Duration) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, redlock.ErrLockLost) {
			t.Errorf("long hold ended with %v, want ErrLockLost", err)
		}
	case <-time.After(within):
		t.Fatalf("no loss signalled to the long holder within %v", within)
	}
}
