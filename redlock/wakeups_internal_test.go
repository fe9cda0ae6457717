package redlock

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// A waiter whose Client's subscriptions reach its key's announcements
// does not poll the masters while the lock is held: the release will wake
// it. Before issue 26 it retried on its backoff (here from 2 ms), about
// ten times in the half second this test watches; now it makes one
// attempt and sleeps at least the longest retry delay.
func TestSubscribedWaiterDoesNotPoll(t *testing.T) {
	lab := redislab.Start(t, 3)
	lab.Trust(t, TrustStart)
	nodes := lab.Clients(t)
	c, err := New(nodes, WithAutoRenew(false), WithNodeTimeout(time.Second),
		WithTTL(30*time.Second), WithRetryDelay(2*time.Millisecond, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held, err := c.TryLock(ctx, "poll")
	if err != nil {
		t.Fatal(err)
	}
	// A first waiter makes the Client subscribe to the key's channel.
	first := waitFor(ctx, c, "poll")
	channels := []string{Keys(c.cfg.prefix, "poll").Channel}
	testkit.Eventually(t, 10*time.Second, "the key's channel confirmed subscribed on a majority",
		func() bool { return c.wakeups.reaches(channels) })
	// The first waiter's retries stop too: let its last one pass.
	time.Sleep(50 * time.Millisecond)

	before := evalshaCalls(t, ctx, nodes[0])
	second := waitFor(ctx, c, "poll")
	time.Sleep(500 * time.Millisecond)
	polls := evalshaCalls(t, ctx, nodes[0]) - before
	t.Logf("%d script calls on node 0 in 500ms while both waited", polls)
	if polls > 4 {
		t.Errorf("%d script calls on node 0 in 500 ms of waiting: the waiters poll although the subscriptions reach their key", polls)
	}

	// The release wakes the waiters in turn, at once.
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range []chan *Lock{first, second} {
		l := <-w
		if l == nil {
			t.Fatal("a waiter did not get the lock")
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("two handoffs took %v: a wake-up was lost", d)
	}
}

// waitFor starts a Lock of key on c and returns where its Lock arrives
// (nil if it failed).
func waitFor(ctx context.Context, c *Client, key string) chan *Lock {
	out := make(chan *Lock, 1)
	go func() {
		l, err := c.Lock(ctx, key)
		if err != nil {
			l = nil
		}
		out <- l
	}()
	return out
}

var evalshaStat = regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`)

// evalshaCalls is how many EVALSHA node has run.
func evalshaCalls(t *testing.T, ctx context.Context, node redis.UniversalClient) int {
	t.Helper()
	info, err := node.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := evalshaStat.FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Only a majority's refusals let a heard waiter sleep long: grants split
// among waiters are undone without an announcement, and nobody would
// wake it.
func TestRefusedByMajority(t *testing.T) {
	votes := func(os ...Outcome) *QuorumError {
		qe := &QuorumError{Op: "lock", Key: "k", Err: ErrNotObtained, Need: len(os)/2 + 1}
		for i, o := range os {
			qe.Votes = append(qe.Votes, NodeVote{Node: i, Outcome: o})
		}
		return qe
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{votes(Refused, Refused, Refused, Granted, Failed), true},
		{votes(Refused, Refused, Granted, Granted, Failed), false},
		{votes(Granted, Granted, Refused, Refused, Granted), false},
		{ErrNotObtained, false},
	} {
		if got := refusedByMajority(tc.err); got != tc.want {
			t.Errorf("refusedByMajority(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
