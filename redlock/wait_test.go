package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// handoffs measures n handoffs of key "k" from holder to waiter: from the
// holder's Unlock returning to the waiter's Lock returning. The holder lets
// go once the waiter is in line on a majority of nodes and, when it listens,
// subscribed to the key's channel on every node, so that the release can
// wake it. nodes are clients of the lab, for the probes.
func handoffs(t *testing.T, holder, waiter *redlock.Client, nodes []redis.UniversalClient, listens bool, n int) []time.Duration {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	var out []time.Duration
	for i := 0; i < n; i++ {
		l, err := holder.Lock(ctx, "k")
		if err != nil {
			t.Fatalf("holder Lock %d: %v", i, err)
		}
		if listens { // the last waiter's subscriptions are dropped: they cannot stand in for this one's
			eventually(t, 5*time.Second, "no subscription left", func() bool { return listening(t, nodes, "k") == 0 })
		}
		owner := fmt.Sprint("waiter-", i) // the name the probes find it by
		got := make(chan time.Time, 1)
		go func() {
			w, err := waiter.Lock(ctx, "k", redlock.WithOwner(owner))
			got <- time.Now()
			if err != nil {
				t.Errorf("waiter Lock %d: %v", i, err)
				return
			}
			w.Unlock(ctx)
		}()
		eventually(t, 5*time.Second, "the waiter in line and listening", func() bool {
			return inLine(t, nodes, "k", owner) >= quorum.Majority(len(nodes)) &&
				(!listens || listening(t, nodes, "k") == len(nodes))
		})
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("holder Unlock %d: %v", i, err)
		}
		released := time.Now()
		out = append(out, (<-got).Sub(released))
	}
	slices.Sort(out)
	return out
}

// A waiter is woken by the release, not by its backoff: with the backoff set
// to half a second, the median handoff is still about one round trip.
func TestHandoffIsWokenByRelease(t *testing.T) {
	holder, nodes, _ := lab(t, 5)
	waiter := newClient(t, nodes, redlock.WithRetryDelay(500*time.Millisecond, time.Second))
	took := handoffs(t, holder, waiter, nodes, true, 21)
	median := took[len(took)/2]
	t.Logf("handoff median %v, max %v", median, took[len(took)-1])
	if median > 15*time.Millisecond {
		t.Errorf("median handoff = %v, want ≤ 15 ms (a wake-up, not a 500 ms backoff)", median)
	}
}

// With subscriptions refused (an ACL user without SUBSCRIBE), waiting still
// completes: the backoff is the fallback.
func TestWaitingCompletesWithoutPubSub(t *testing.T) {
	holder, nodes, l := lab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	for _, n := range nodes {
		if err := n.Do(ctx, "ACL", "SETUSER", "nosub", "on", "nopass", "~*", "&*", "+@all", "-subscribe", "-psubscribe", "-ssubscribe").Err(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
	}
	noSub := l.Clients(t, func(o *redis.Options) { o.Username, o.Password = "nosub", "any" }) // nopass: any password
	ps := noSub[0].Subscribe(ctx, "x")
	if _, err := ps.Receive(ctx); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("the nosub user's SUBSCRIBE = %v, want NOPERM; the test would prove nothing", err)
	}
	ps.Close()
	waiter := newClient(t, noSub, redlock.WithRetryDelay(20*time.Millisecond, 40*time.Millisecond))
	took := handoffs(t, holder, waiter, nodes, false, 5)
	t.Logf("handoffs without pub/sub: %v", took)
}

// All of a Client's waiters share one subscription connection per node, and
// the connections are dropped when nobody waits.
func TestSubscriptionsAreSharedAndDropped(t *testing.T) {
	holder, nodes, _ := lab(t, 3)
	waiter := newClient(t, nodes)
	ctx := ctxFor(t, 30*time.Second)
	var held []*redlock.Lock
	for k := 0; k < 3; k++ { // preparation: retried, a busy host may miss a node timeout
		key := fmt.Sprint("key-", k)
		held = append(held, eventuallyLocked(t, 10*time.Second, "the holder locks "+key, func() (*redlock.Lock, error) {
			return holder.TryLock(ctx, key)
		}))
	}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := waiter.Lock(ctx, fmt.Sprint("key-", w%3))
			if err != nil {
				t.Errorf("waiter %d: %v", w, err)
				return
			}
			l.Unlock(ctx)
		}()
	}
	eventually(t, 5*time.Second, "3 channels subscribed on every node", func() bool {
		return subscribedChannels(t, nodes) == 3*len(nodes)
	})
	for i, n := range nodes {
		if got := pubsubConns(t, n); got != 1 {
			t.Errorf("node %d: %d subscription connections for 6 waiters on 3 keys, want 1", i, got)
		}
	}
	for _, l := range held {
		l.Unlock(ctx)
	}
	wg.Wait()
	eventually(t, 5*time.Second, "subscriptions dropped", func() bool {
		for _, n := range nodes {
			if pubsubConns(t, n) != 0 {
				return false
			}
		}
		return true
	})
}

func pubsubConns(t *testing.T, n redis.UniversalClient) int {
	t.Helper()
	list, err := n.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	conns := 0
	for _, line := range splitLines(list) {
		if containsField(line, "sub=") && !containsField(line, "sub=0") {
			conns++
		}
	}
	return conns
}

func subscribedChannels(t *testing.T, nodes []redis.UniversalClient) int {
	t.Helper()
	total := 0
	for _, n := range nodes {
		chans, err := n.PubSubChannels(context.Background(), "*").Result()
		if err != nil {
			t.Fatalf("PUBSUB CHANNELS: %v", err)
		}
		total += len(chans)
	}
	return total
}

// Under contention every waiter gets its turn: 8 workers on one key, each
// holding 2 ms, for 3 s — no worker gets more than twice another's share.
func TestNoStarvation(t *testing.T) {
	_, nodes, l := lab(t, 5)
	clients := []*redlock.Client{newClient(t, nodes), newClient(t, l.Clients(t))}
	ctx := ctxFor(t, time.Minute)
	const workers = 8
	counts := make([]int, workers)
	var waits []time.Duration
	var mu sync.Mutex
	end := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				start := time.Now()
				lk, err := clients[w%2].Lock(ctx, "hot")
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				mu.Lock()
				waits = append(waits, time.Since(start))
				counts[w]++
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the holder's work, not a wait for anything
				lk.Unlock(ctx)
			}
		}()
	}
	wg.Wait()
	slices.Sort(waits)
	lo, hi := slices.Min(counts), slices.Max(counts)
	t.Logf("acquisitions per worker %v (min/max %.2f); wait p50 %v, p99 %v", counts, float64(lo)/float64(hi),
		waits[len(waits)/2], waits[len(waits)*99/100])
	if lo == 0 || hi > 2*lo {
		t.Errorf("acquisitions per worker %v: the busiest got more than twice the least served", counts)
	}
}

// Acquisitions by one owner nest; other owners stay excluded until the last
// hold is released.
func TestReentrantOwnerNests(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 10*time.Second)
	job := redlock.WithOwner("job-42")
	outer, err := c.Lock(ctx, "k", job)
	if err != nil {
		t.Fatalf("outer Lock: %v", err)
	}
	inner, err := c.TryLock(ctx, "k", job)
	if err != nil {
		t.Fatalf("nested TryLock by the same owner: %v", err)
	}
	// The nested holding's majority meets the one the outer token was written
	// back to; a node that granted the outer late may be further ahead.
	if inner.Token() < outer.Token() {
		t.Errorf("nested token = %d, want at least the outer holding's %d", inner.Token(), outer.Token())
	}
	if _, err := other.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("another owner's TryLock while nested = %v, want ErrNotObtained", err)
	}
	if err := inner.Unlock(ctx); err != nil {
		t.Fatalf("inner Unlock: %v", err)
	}
	if _, err := other.TryLock(ctx, "k", redlock.WithOwner("job-43")); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("another owner's TryLock after the inner release = %v, want ErrNotObtained", err)
	}
	if err := outer.Unlock(ctx); err != nil {
		t.Fatalf("outer Unlock: %v", err)
	}
	eventually(t, time.Second, "key freed after the last hold", func() bool { return countHeld(t, nodes, "k") == 0 })
	l, err := other.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("another owner's TryLock after the last release: %v", err)
	}
	l.Unlock(ctx)
}

// Without an owner, a second acquisition by the same Client waits like any
// other: locks are not reentrant by default.
func TestNotReentrantByDefault(t *testing.T) {
	c, _, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if _, err := c.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("second TryLock by the same Client = %v, want ErrNotObtained", err)
	}
}
