package redlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// permitHolders returns, per node, the owner of permit i of name ("" none).
func permitHolders(t *testing.T, nodes []redis.UniversalClient, name string, i int) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for n, nd := range nodes {
		v, err := nd.HGet(context.Background(), redlock.PermitKeys(redlock.DefaultPrefix, name, i).Lock, "owner").Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("node %d: HGET: %v", n, err)
		}
		out[n] = v
	}
	return out
}

// permitsHeld counts, over every node, the permits of name held there.
func permitsHeld(t *testing.T, nodes []redis.UniversalClient, name string, limit int) int {
	t.Helper()
	held := 0
	for i := range limit {
		for _, h := range permitHolders(t, nodes, name, i) {
			if h != "" {
				held++
			}
		}
	}
	return held
}

// A holder counter: at every enter and exit, how many are inside, and the
// time-weighted mean of that count.
type occupancy struct {
	mu         sync.Mutex
	inside     int
	most, over int // over: enters that made more than the limit inside
	since      time.Time
	area       time.Duration // Σ inside × time
	start      time.Time
	full       chan struct{} // closed once limit were inside at once (fill)
}

// fill returns a channel closed once limit holders have been inside at
// once.
func (o *occupancy) fill(limit int) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.full == nil {
		o.full = make(chan struct{})
		if o.most >= limit {
			close(o.full)
		}
	}
	return o.full
}

func (o *occupancy) change(d int, limit int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.start.IsZero() {
		o.start, o.since = now, now
	}
	o.area += time.Duration(o.inside) * now.Sub(o.since)
	o.since = now
	o.inside += d
	if d > 0 && o.inside > limit {
		o.over++
	}
	if o.full != nil && o.most < limit && o.inside >= limit {
		close(o.full)
	}
	o.most = max(o.most, o.inside)
}

func (o *occupancy) enter(limit int) { o.change(1, limit) }
func (o *occupancy) exit()           { o.change(-1, 0) }

// mean is the average number inside since the first enter.
func (o *occupancy) mean() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return float64(o.area) / float64(o.since.Sub(o.start))
}

// 12 goroutines on 3 clients share a semaphore of 3 permits for 5 s while
// one master is SIGKILLed and restarted empty: never more than 3 inside at
// once, the permits are used side by side, and everyone gets in.
func TestSemaphoreNeverAdmitsMoreThanLimit(t *testing.T) {
	const workers, limit, run = 12, 3, 5 * time.Second
	c1, nodes, lb := lab(t, 5)
	lb.RequireControl(t)
	clients := []*redlock.Client{c1, newClient(t, nodes), newClient(t, nodes)}
	var occ occupancy
	holds := make([]int, workers)
	var waits []time.Duration
	var mu sync.Mutex
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				asked := time.Now()
				l, err := clients[w%3].Acquire(ctxFor(t, 10*time.Second), "jobs", limit)
				if err != nil {
					t.Errorf("worker %d: Acquire: %v", w, err)
					return
				}
				mu.Lock()
				waits = append(waits, time.Since(asked))
				mu.Unlock()
				occ.enter(limit)
				// The work, or the end of the lock. Until limit holders
				// have been inside at once, a hold waits (up to 1 s) for
				// the others: on a busy host an Acquire takes far longer
				// than 5 ms of work, and holds would rarely overlap.
				work := time.After(5 * time.Millisecond)
				select {
				case <-occ.fill(limit):
				case <-l.Done():
				case <-time.After(time.Second):
				}
				select {
				case <-work:
				case <-l.Done():
				}
				occ.exit()
				// A master killed or restarted empty may leave a release
				// that no majority confirms; the lease then runs out there.
				var qe *redlock.QuorumError
				if err := l.Unlock(context.Background()); err != nil && !errors.Is(err, redlock.ErrLockLost) && !errors.As(err, &qe) {
					t.Errorf("worker %d: Unlock: %v", w, err)
				}
				holds[w]++
			}
		}()
	}
	// Mid-run, master 2 is killed and comes back empty.
	time.Sleep(run / 3) // the fault's timing, not an assertion
	if err := lb.Nodes[2].Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	time.Sleep(run / 6)
	if err := lb.Nodes[2].Restart(true); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	wg.Wait()
	slices.Sort(waits)
	t.Logf("most holders at once %d (limit %d), %.2f on average; holds per worker %v; wait p50 %v p99 %v",
		occ.most, limit, occ.mean(), holds, waits[len(waits)/2], waits[len(waits)*99/100])
	if occ.over > 0 || occ.most > limit {
		t.Errorf("%d entries over the limit; at most %d holders at once, want ≤ %d", occ.over, occ.most, limit)
	}
	if occ.most < limit {
		t.Errorf("at most %d holders at once of %d permits: the permits were not used side by side", occ.most, limit)
	}
	// Everyone gets in: no worker starved of its share of the permits.
	requireFairShares(t, "worker", holds)
}

// The interleaving that breaks a counting semaphore over a quorum: with 5
// masters and a limit of 2, A is admitted by masters 0–2 and B by 2–4; a
// counter would now be at 1 on masters 0, 1, 3, 4, which admit C. With
// permits, C would need a majority for A's or B's permit: it is refused.
func TestSemaphoreLimitTwoOfFiveAdmitsNoThird(t *testing.T) {
	c, nodes, _ := lab(t, 5, redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 10*time.Second)
	a, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	b, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if a.Permit() == b.Permit() || a.Permit() < 0 || b.Permit() < 0 || a.Permit() > 1 || b.Permit() > 1 {
		t.Fatalf("A holds permit %d, B %d; want 0 and 1", a.Permit(), b.Permit())
	}
	for _, n := range nodes[3:] { // A's grant never reached masters 3, 4
		n.Del(ctx, redlock.PermitKeys(redlock.DefaultPrefix, "s", a.Permit()).Lock)
	}
	for _, n := range nodes[:2] { // B's never reached masters 0, 1
		n.Del(ctx, redlock.PermitKeys(redlock.DefaultPrefix, "s", b.Permit()).Lock)
	}
	for range 5 {
		if l, err := c.TryAcquire(ctx, "s", 2); !errors.Is(err, redlock.ErrNotObtained) {
			t.Fatalf("C: %v, %v; want ErrNotObtained", l, err)
		}
	}
	if _, err := c.Acquire(ctxFor(t, 300*time.Millisecond), "s", 2); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("C waiting: %v, want ErrNotObtained", err)
	}
	eventually(t, 2*time.Second, "C's grants undone", func() bool { return permitsHeld(t, nodes, "s", 2) == 6 })
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A Unlock: %v", err)
	}
	l, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("C after A left: %v", err)
	}
	if l.Permit() != a.Permit() || l.Token() <= a.Token() {
		t.Errorf("C holds permit %d with token %d; want A's permit %d with a token above A's %d", l.Permit(), l.Token(), a.Permit(), a.Token())
	}
	l.Unlock(ctx)
	b.Unlock(ctx)
}

func TestSemaphoreRefusesAnotherLimitWhileHeld(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryAcquire(ctx, "s", 3)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	before := snapshot(t, nodes)
	for _, limit := range []int{1, 2, 4} {
		if _, err := c.TryAcquire(ctx, "s", limit); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("TryAcquire with limit %d while held with 3 = %v, want ErrInvalid", limit, err)
		}
		if _, err := c.Acquire(ctx, "s", limit); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Acquire with limit %d while held with 3 = %v, want ErrInvalid", limit, err)
		}
	}
	if after := snapshot(t, nodes); !slices.Equal(before, after) {
		t.Errorf("refused limits changed the masters:\n before %q\n after  %q", before, after)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	l2, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("TryAcquire with a new limit once none is held: %v", err)
	}
	l2.Unlock(ctx)
}

// snapshot lists every key on the nodes with its value's type and content,
// leaving out TTLs (time passes).
func snapshot(t *testing.T, nodes []redis.UniversalClient) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for i, n := range nodes {
		keys, err := n.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatalf("node %d: KEYS: %v", i, err)
		}
		slices.Sort(keys)
		for _, k := range keys {
			dump, _ := n.Dump(ctx, k).Result()
			out = append(out, string(rune('0'+i))+" "+k+" "+dump)
		}
	}
	return out
}

// A waiter is woken by a release at once (the name's channel), long before
// its backoff would have tried again; waiters are served in arrival order.
func TestSemaphoreReleaseWakesTheFirstWaiter(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithRetryDelay(5*time.Second, 5*time.Second))
	ctx := ctxFor(t, 20*time.Second)
	held := make([]*redlock.Lock, 2)
	for i := range held {
		l, err := c.TryAcquire(ctx, "w", 2)
		if err != nil {
			t.Fatalf("TryAcquire %d: %v", i, err)
		}
		held[i] = l
	}
	got := make(chan time.Time, 1)
	go func() {
		l, err := c.Acquire(ctx, "w", 2)
		if err != nil {
			t.Errorf("waiter: %v", err)
			close(got)
			return
		}
		got <- time.Now()
		l.Unlock(context.Background())
	}()
	queue := redlock.PermitKeys(redlock.DefaultPrefix, "w", 0).Queue
	eventually(t, 5*time.Second, "the waiter in line on a majority", func() bool {
		in := 0
		for _, n := range nodes {
			if n.ZCard(ctx, queue).Val() == 1 {
				in++
			}
		}
		return in >= 2
	})
	// A one-shot attempt does not jump the line while a permit is awaited.
	if _, err := c.TryAcquire(ctx, "w", 2); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryAcquire past a waiter = %v, want ErrNotObtained", err)
	}
	released := time.Now()
	if err := held[0].Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	at, ok := <-got
	if !ok {
		return
	}
	if d := at.Sub(released); d > 2*time.Second {
		t.Errorf("the waiter got the permit %v after the release; its retry delay is 5 s, so the wake-up was lost", d)
	}
	held[1].Unlock(ctx)
}

// A holder stalled past its validity loses its permit to the next holder,
// whose token for that permit is larger: a store fenced per permit refuses
// the stalled holder's late write.
func TestSemaphoreTokensFencePerPermit(t *testing.T) {
	c, _, _ := lab(t, 3, redlock.WithAutoRenew(false), redlock.WithNodeTimeout(50*time.Millisecond), redlock.WithTTL(400*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	stalled, err := c.TryAcquire(ctx, "f", 1)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	<-stalled.Done() // the lease ends while its holder is paused
	next := eventuallyLocked(t, 5*time.Second, "the permit after the stalled lease", func() (*redlock.Lock, error) {
		return c.TryAcquire(ctx, "f", 1)
	})
	defer next.Unlock(ctx)
	if next.Permit() != stalled.Permit() || next.Token() <= stalled.Token() {
		t.Fatalf("next holds permit %d token %d; stalled permit %d token %d: want the same permit, a larger token",
			next.Permit(), next.Token(), stalled.Permit(), stalled.Token())
	}
	store := map[int]int64{} // per permit, the largest token seen
	write := func(l *redlock.Lock) bool {
		if l.Token() < store[l.Permit()] {
			return false
		}
		store[l.Permit()] = l.Token()
		return true
	}
	if !write(next) || write(stalled) {
		t.Errorf("the fenced store accepted the stalled holder's write after the next holder's")
	}
}

// A Lock from Acquire is renewed, released and reported as Lock's are.
func TestSemaphoreLockIsALock(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithTTL(600*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.Acquire(ctx, "r", 2)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if l.Key() != "r" || !slices.Equal(l.Keys(), []string{"r"}) || l.TokenOf("r") != l.Token() || l.Token() <= 0 {
		t.Errorf("Key %q Keys %q TokenOf %d Token %d", l.Key(), l.Keys(), l.TokenOf("r"), l.Token())
	}
	first := l.Until()
	eventually(t, 3*time.Second, "a renewal", func() bool { return l.Until().After(first) })
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	// Unlock returns at a majority; the last node's release lands after.
	eventually(t, 2*time.Second, "no permit held on any node after Unlock", func() bool { return permitsHeld(t, nodes, "r", 2) == 0 })
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("second Unlock = %v, want ErrNotHeld", err)
	}
}

// The limit record's gap at its worst: the record has expired (deleted here)
// while holders of limit 3 hold every permit. A limit 2 finds its permits
// taken; a limit 5 gets only the two permits beyond 3: permits are one key
// per index whatever the limit, so never more holders than the larger limit.
func TestSemaphoreLimitGapBoundedByLargerLimit(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 10*time.Second)
	var held []*redlock.Lock
	for range 3 {
		l, err := c.TryAcquire(ctx, "g", 3)
		if err != nil {
			t.Fatalf("TryAcquire: %v", err)
		}
		held = append(held, l)
	}
	for _, n := range nodes {
		n.Del(ctx, redlock.LimitKey(redlock.DefaultPrefix, "g"))
	}
	if _, err := c.TryAcquire(ctx, "g", 2); !errors.Is(err, redlock.ErrNotObtained) {
		t.Errorf("limit 2 with every permit of limit 3 held = %v, want ErrNotObtained", err)
	}
	admitted := 0
	for range 4 {
		if l, err := c.TryAcquire(ctx, "g", 5); err == nil {
			admitted++
			held = append(held, l)
		}
	}
	if admitted != 2 {
		t.Errorf("limit 5 admitted %d more beside 3 holders of limit 3, want 2 (at most 5 in all)", admitted)
	}
	for _, l := range held {
		l.Unlock(ctx)
	}
}

// The limit record lives as long as a permit held with it: the watchdog's
// renewals keep it for another fencing retention each time, so a holder
// renewed far past the retention still refuses another limit; and a node
// that lost the permit and the record (an empty restart) gets both back
// from the next renewal's repair.
func TestSemaphoreLimitRecordLivesWithItsHolders(t *testing.T) {
	const retention = time.Second
	c, nodes, _ := lab(t, 3, redlock.WithTTL(600*time.Millisecond), redlock.WithFenceRetention(retention))
	ctx := ctxFor(t, 15*time.Second)
	record := redlock.LimitKey(redlock.DefaultPrefix, "g")
	l, err := c.TryAcquire(ctx, "g", 3)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	defer l.Unlock(ctx)
	granted := time.Now()
	eventually(t, 10*time.Second, "three fencing retentions passed, the permit renewed throughout", func() bool {
		return time.Since(granted) > 3*retention && l.Err() == nil
	})
	for i, n := range nodes {
		if got, err := n.Get(ctx, record).Result(); err != nil || got != "3" {
			t.Errorf("node %d: limit record = %q, %v after %v held; want \"3\"", i, got, err, time.Since(granted))
		}
	}
	if other, err := c.TryAcquire(ctx, "g", 2); !errors.Is(err, redlock.ErrInvalid) {
		if other != nil {
			other.Unlock(ctx)
		}
		t.Errorf("limit 2 while a permit of limit 3 is held for %v = %v, want ErrInvalid", time.Since(granted), err)
	}

	// Node 0 loses the permit and the record; a renewal repairs both.
	permit := redlock.PermitKeys(redlock.DefaultPrefix, "g", l.Permit())
	if err := nodes[0].Del(ctx, permit.Lock, record).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	eventually(t, 5*time.Second, "node 0's permit and limit record repaired", func() bool {
		return permitHolders(t, nodes, "g", l.Permit())[0] != "" && nodes[0].Get(ctx, record).Val() == "3"
	})
	if ttl := nodes[0].PTTL(ctx, record).Val(); ttl <= 0 || ttl > retention {
		t.Errorf("repaired limit record's TTL = %v, want in (0, %v]", ttl, retention)
	}
}
