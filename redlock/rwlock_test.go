package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// rwChecker records who is inside a key's critical section: readers,
// writers, and the tokens they entered with.
type rwChecker struct {
	mu          sync.Mutex
	readers     int
	writers     int
	maxReaders  int
	overlaps    int   // a writer with anyone else inside, or a reader with a writer
	regressions int   // a token out of order
	top         int64 // the largest token that entered so far
	lastWriter  int64 // the token of the last writer that left
	exits       atomic.Int64
}

func (k *rwChecker) enter(write bool, token int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if write {
		if k.readers > 0 || k.writers > 0 {
			k.overlaps++
		}
		if token <= k.top {
			k.regressions++
		}
		k.writers++
	} else {
		if k.writers > 0 {
			k.overlaps++
		}
		if token < k.lastWriter {
			k.regressions++
		}
		k.readers++
		k.maxReaders = max(k.maxReaders, k.readers)
	}
	k.top = max(k.top, token)
}

func (k *rwChecker) exit(write bool, token int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if write {
		k.writers--
		k.lastWriter = token
	} else {
		k.readers--
		k.exits.Add(1)
	}
}

// Eight readers and two writers on two Clients share one key for 5 s. A
// checker sees every entry and exit: no writer is ever inside with anyone
// else, readers are inside together, each writer's token is larger than
// every token before it, and each reader's at least the last writer's.
//
// A writer waits at most for the reader holds that were under way or in
// line when it queued: a reader asking after it waits behind it. Each
// reader worker asks for one hold at a time, so it completes at most one
// hold after the writer took its ticket, and at most one more between the
// moment the wait is measured from (just before Lock) and the ticket: at
// most 2 per reader worker, 16 in all.
func TestRWLockCheckerStress(t *testing.T) {
	const readers, writers, run = 8, 2, 5 * time.Second
	c1, nodes, _ := lab(t, 5)
	clients := []*redlock.Client{c1, newClient(t, nodes)}
	var k rwChecker
	var mu sync.Mutex
	var waits []time.Duration
	var passed []int64 // per writer hold, the reader holds completed while it waited
	rholds := make([]int, readers)
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range readers + writers {
		write := w >= readers
		wg.Go(func() {
			c := clients[w%2]
			for time.Now().Before(deadline) {
				ctx := ctxFor(t, 20*time.Second)
				before, start := k.exits.Load(), time.Now()
				var l *redlock.Lock
				var err error
				if write {
					l, err = c.Lock(ctx, "rw")
				} else {
					l, err = c.RLock(ctx, "rw")
				}
				if err != nil {
					t.Errorf("worker %d (writer %v): %v", w, write, err)
					return
				}
				if write {
					mu.Lock()
					waits = append(waits, time.Since(start))
					passed = append(passed, k.exits.Load()-before)
					mu.Unlock()
				}
				k.enter(write, l.Token())
				time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond) // the work
				k.exit(write, l.Token())
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("worker %d (writer %v): Unlock: %v", w, write, err)
				}
				if !write {
					rholds[w]++
				} else {
					time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // let readers in between
				}
			}
		})
	}
	wg.Wait()
	if len(waits) == 0 {
		t.Fatal("no writer held the key")
	}
	slices.Sort(waits)
	t.Logf("reader holds per worker %v; writer holds %d; most readers inside together %d", rholds, len(waits), k.maxReaders)
	t.Logf("writer wait p50 %v, p99 %v, max %v; reader holds completed while a writer waited: max %d, mean %.1f",
		waits[len(waits)/2], waits[len(waits)*99/100], waits[len(waits)-1], slices.Max(passed), mean(passed))
	if k.overlaps != 0 || k.regressions != 0 {
		t.Errorf("overlaps %d, token regressions %d; want 0 and 0", k.overlaps, k.regressions)
	}
	if k.maxReaders < 2 {
		t.Errorf("at most %d reader inside at once, want readers together", k.maxReaders)
	}
	if m := slices.Max(passed); m > 2*readers {
		t.Errorf("a writer waited while %d reader holds completed, want ≤ %d", m, 2*readers)
	}
	// Neither kind starves: every reader gets its share, and the writers
	// hold too (len(waits) > 0 above; passed bounds how long they wait).
	requireFairShares(t, "reader", rholds)
}

func mean(xs []int64) float64 {
	var sum int64
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}

// A writer is not starved by readers whose holds overlap without a gap: it
// gets the key within a bound, and readers that come after it queued are
// refused meanwhile.
func TestRWLockWriterNotStarved(t *testing.T) {
	const readers, hold = 4, 100 * time.Millisecond
	rc, nodes, _ := lab(t, 5)
	wc, probe := newClient(t, nodes), newClient(t, nodes)
	ctx := ctxFor(t, 30*time.Second)
	var inside atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			time.Sleep(time.Duration(r) * hold / readers) // staggered: some reader always holds
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := rc.RLock(ctx, "hot")
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				inside.Add(1)
				time.Sleep(hold)
				inside.Add(-1)
				l.Unlock(context.Background())
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	eventually(t, 5*time.Second, "the reader stream under way", func() bool { return inside.Load() >= 2 })

	got := make(chan error, 1)
	var took time.Duration
	var leaving atomic.Bool // set before the writer's Unlock: from then on a probe may be granted
	start := time.Now()
	go func() {
		l, err := wc.Lock(ctx, "hot")
		took = time.Since(start)
		if err == nil {
			if n := inside.Load(); n != 0 {
				err = errors.New("a reader is inside with the writer")
			}
			leaving.Store(true)
			l.Unlock(context.Background())
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "the writer in line on a majority", func() bool { return writersQueued(t, nodes, "hot") >= 3 })
	refused := 0
	for range 5 {
		l, err := probe.TryRLock(ctx, "hot")
		if leaving.Load() {
			if l != nil {
				l.Unlock(ctx)
			}
			break
		}
		if !errors.Is(err, redlock.ErrNotObtained) {
			t.Errorf("TryRLock while a writer waits = %v, want ErrNotObtained", err)
		}
		refused++
	}
	// The writer waits for at most the readers' holds under way and in line
	// when it queued: one each, 4 × 100 ms at most; two seconds allow for a
	// loaded machine. Without its place in line it would wait forever.
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
		t.Logf("writer got the key after %v under a stream of %d readers holding %v each; %d TryRLocks refused while it waited",
			took, readers, hold, refused)
	case <-time.After(2 * time.Second):
		t.Fatalf("writer still waiting after 2 s under a stream of %d readers holding %v each", readers, hold)
	}
	if refused == 0 {
		t.Error("no TryRLock tried while the writer waited")
	}
}

// writersQueued returns how many nodes have a writer (a member not marked
// "r:") in key's waiters' queue.
func writersQueued(t *testing.T, nodes []redis.UniversalClient, key string) int {
	t.Helper()
	n := 0
	for _, nd := range nodes {
		members, err := nd.ZRange(context.Background(), redlock.Keys(redlock.DefaultPrefix, key).Queue, 0, -1).Result()
		if err != nil {
			t.Fatalf("ZRANGE: %v", err)
		}
		if slices.ContainsFunc(members, func(m string) bool { return !strings.HasPrefix(m, "r:") }) {
			n++
		}
	}
	return n
}

// Readers share a key, a writer excludes them and they exclude it, and
// tokens order them: readers carry the last writer's, the next writer's is
// larger.
func TestRWLockExcludesWritersAndSharesReaders(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	w, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	var qe *redlock.QuorumError
	if _, err := other.TryRLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) || !errors.As(err, &qe) || countOutcome(qe, quorum.Refused) < 3 {
		t.Fatalf("TryRLock while a writer holds = %v, want ErrNotObtained refused by a majority", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	r1, err := c.TryRLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryRLock: %v", err)
	}
	r2, err := other.RLock(ctx, "k")
	if err != nil {
		t.Fatalf("second reader's RLock: %v", err)
	}
	// A reader's token is the largest counter among its grants: at least
	// the last writer's token (a node that granted that writer late may
	// have issued a larger one), and never a new one.
	for _, r := range []*redlock.Lock{r1, r2} {
		if r.Token() < w.Token() || r.Key() != "k" || !slices.Equal(r.Keys(), []string{"k"}) {
			t.Errorf("reader Token() = %d, Key() = %q, Keys() = %q; want ≥ the last writer's %d, \"k\", [k]", r.Token(), r.Key(), r.Keys(), w.Token())
		}
	}
	if _, err := other.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) || !errors.As(err, &qe) || countOutcome(qe, quorum.Refused) < 3 {
		t.Fatalf("TryLock while readers hold = %v, want ErrNotObtained refused by a majority", err)
	}
	if _, err := other.TryLockMany(ctx, []string{"j", "k"}); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLockMany of a key readers hold = %v, want ErrNotObtained", err)
	}
	eventually(t, time.Second, "the refused LockMany undone", func() bool { return countHeld(t, nodes, "j") == 0 })
	if err := r1.Extend(ctx); err != nil {
		t.Fatalf("reader's Extend: %v", err)
	}
	for _, r := range []*redlock.Lock{r1, r2} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatalf("reader's Unlock: %v", err)
		}
	}
	if err := r1.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("second Unlock of a reader = %v, want ErrNotHeld", err)
	}
	// Each Unlock returned at its own majority; the two may share one node.
	names := redlock.Keys(redlock.DefaultPrefix, "k")
	eventually(t, 2*time.Second, "both readers gone from every node", func() bool {
		return !slices.ContainsFunc(nodes, func(n redis.UniversalClient) bool { return n.Exists(ctx, names.Readers).Val() == 1 })
	})
	w2, err := other.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock after the readers left: %v", err)
	}
	if w2.Token() <= max(r1.Token(), r2.Token()) {
		t.Errorf("next writer's token %d, want > the readers' %d and %d", w2.Token(), r1.Token(), r2.Token())
	}
	w2.Unlock(ctx)
	// Unlock returns once a majority released; the other nodes' releases
	// land just after it.
	for i, n := range nodes {
		eventually(t, 2*time.Second, fmt.Sprintf("node %d: none of the readers, queue, leases and lock left after every Unlock", i), func() bool {
			return n.Exists(ctx, names.Readers, names.Queue, names.Leases, names.Lock).Val() == 0
		})
	}
}

// A reader whose entries vanish from a majority is lost: Extend reports it
// and Done closes; with the watchdog on, where a writer took the nodes
// meanwhile, Done closes before Until.
func TestRWLockReaderLossIsSignalled(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	ctx := ctxFor(t, 10*time.Second)
	names := redlock.Keys(redlock.DefaultPrefix, "k")

	r, err := c.TryRLock(ctx, "k", redlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("TryRLock: %v", err)
	}
	for _, n := range nodes[:3] {
		n.Del(ctx, names.Readers)
	}
	requireLost(t, ctx, r)

	// The watchdog repairs a missing reader where no writer holds the key:
	// an intruding writer on a majority makes the loss final.
	r, err = c.TryRLock(ctx, "k", redlock.WithTTL(600*time.Millisecond))
	if err != nil {
		t.Fatalf("TryRLock: %v", err)
	}
	for _, n := range nodes[:3] {
		n.Del(ctx, names.Readers)
		n.HSet(ctx, names.Lock, "owner", "intruder")
		n.PExpire(ctx, names.Lock, 5*time.Second)
	}
	select {
	case <-r.Done():
		if lostAt := time.Now(); !lostAt.Before(r.Until()) {
			t.Errorf("Done closed %v after Until, want before", lostAt.Sub(r.Until()))
		}
		if !errors.Is(r.Err(), redlock.ErrLockLost) {
			t.Errorf("Err = %v, want ErrLockLost", r.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5 s after the reader was lost")
	}
	r.Unlock(ctx)
}

// A reader whose entry one node lost (restarted empty, say) gets it back
// from the watchdog, as a writer does.
func TestRWLockReaderRepairedByWatchdog(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	names := redlock.Keys(redlock.DefaultPrefix, "k")
	r, err := c.TryRLock(ctx, "k", redlock.WithTTL(600*time.Millisecond))
	if err != nil {
		t.Fatalf("TryRLock: %v", err)
	}
	defer r.Unlock(ctx)
	nodes[0].Del(ctx, names.Readers)
	eventually(t, 3*time.Second, "the reader set again on the node that lost it", func() bool {
		return nodes[0].ZCard(ctx, names.Readers).Val() == 1
	})
	if r.Err() != nil {
		t.Fatalf("Err = %v, want nil", r.Err())
	}
}

// A waiter is woken by the release it waits for, not by its backoff (set to
// at least half a second here): a reader's Unlock wakes the writer, a
// writer's Unlock wakes every reader. Each round uses a key of its own, so
// that a subscription being dropped from the round before is not mistaken
// for the waiter's.
func TestRWLockUnlockWakesWaiters(t *testing.T) {
	const rounds, readers = 5, 3
	c, nodes, _ := lab(t, 5)
	slow := newClient(t, nodes, redlock.WithRetryDelay(time.Second, 2*time.Second))
	ctx := ctxFor(t, time.Minute)

	var toWriter, toReaders []time.Duration
	for i := range rounds {
		key := fmt.Sprint("to-writer-", i)
		r, err := c.RLock(ctx, key)
		if err != nil {
			t.Fatalf("RLock %d: %v", i, err)
		}
		got := waiters(t, 1, func() (*redlock.Lock, error) { return slow.Lock(ctx, key) })
		waiting(t, nodes, key, 1)
		if err := r.Unlock(ctx); err != nil {
			t.Fatalf("reader Unlock %d: %v", i, err)
		}
		toWriter = append(toWriter, got(time.Now()))

		key = fmt.Sprint("to-readers-", i)
		w, err := c.Lock(ctx, key)
		if err != nil {
			t.Fatalf("Lock %d: %v", i, err)
		}
		got = waiters(t, readers, func() (*redlock.Lock, error) { return slow.RLock(ctx, key) })
		waiting(t, nodes, key, readers)
		if err := w.Unlock(ctx); err != nil {
			t.Fatalf("writer Unlock %d: %v", i, err)
		}
		toReaders = append(toReaders, got(time.Now()))
	}
	slices.Sort(toWriter)
	slices.Sort(toReaders)
	t.Logf("from a reader's Unlock to the waiting writer holding: %v", toWriter)
	t.Logf("from a writer's Unlock to the last of %d waiting readers holding: %v", readers, toReaders)
	if m := toWriter[rounds/2]; m > 250*time.Millisecond {
		t.Errorf("median handoff from a reader to a writer %v, want ≤ 250 ms (a wake-up, not a ≥ 500 ms backoff)", m)
	}
	if m := toReaders[rounds/2]; m > 250*time.Millisecond {
		t.Errorf("median handoff from a writer to all %d readers %v, want ≤ 250 ms (a wake-up, not a ≥ 500 ms backoff)", readers, m)
	}
}

// waiters starts n calls of acquire and returns a function that, given the
// moment of the release they wait for, waits for all of them to hold, and
// returns how long after it the last one did. It unlocks them.
func waiters(t *testing.T, n int, acquire func() (*redlock.Lock, error)) func(time.Time) time.Duration {
	t.Helper()
	type held struct {
		l  *redlock.Lock
		at time.Time
	}
	out := make(chan held, n)
	for range n {
		go func() {
			l, err := acquire()
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			out <- held{l, time.Now()}
		}()
	}
	return func(released time.Time) time.Duration {
		var last time.Duration
		var hs []held
		for range n {
			h := <-out
			last = max(last, h.at.Sub(released))
			hs = append(hs, h)
		}
		for _, h := range hs {
			if h.l != nil {
				h.l.Unlock(context.Background())
			}
		}
		return last
	}
}

// waiting waits until n waiters are in line for key on every node, and
// every node's subscription to its channel is active: a release then wakes
// them.
func waiting(t *testing.T, nodes []redis.UniversalClient, key string, n int) {
	t.Helper()
	names := redlock.Keys(redlock.DefaultPrefix, key)
	eventually(t, 5*time.Second, "waiters in line and listening", func() bool {
		for _, nd := range nodes {
			if nd.ZCard(context.Background(), names.Queue).Val() < int64(n) {
				return false
			}
			if subs := nd.PubSubNumSub(context.Background(), names.Channel).Val(); subs[names.Channel] < 1 {
				return false
			}
		}
		return true
	})
}

// Bad input to RLock and TryRLock is refused before anything is sent.
func TestRWLockRefusesBadInputAndSendsNothing(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	long := strings.Repeat("k", redlock.MaxKeyLen+1)
	for _, tc := range []struct {
		name string
		key  string
		opts []redlock.Option
	}{
		{"empty key", "", nil},
		{"long key", long, nil},
		{"bad TTL", "k", []redlock.Option{redlock.WithTTL(-1)}},
		{"owner marked as a reader", "k", []redlock.Option{redlock.WithOwner("r:job")}},
	} {
		for name, call := range map[string]func(context.Context, string, ...redlock.Option) (*redlock.Lock, error){
			"RLock": c.RLock, "TryRLock": c.TryRLock, "Lock": c.Lock,
		} {
			if name == "Lock" && tc.opts == nil {
				continue // validate_test covers Lock's keys
			}
			l, err := call(ctx, tc.key, tc.opts...)
			if !errors.Is(err, redlock.ErrInvalid) || l != nil {
				t.Errorf("%s %s = %v, %.200v; want nil, ErrInvalid", name, tc.name, l, err)
			}
		}
	}
	for i, n := range nodes {
		if keys, err := n.Keys(ctx, "*").Result(); err != nil || len(keys) != 1 || keys[0] != redlock.TrustKey {
			t.Errorf("node %d: keys %v (err %v), want only the lab's vouch", i, keys, err)
		}
	}
}
