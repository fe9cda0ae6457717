package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// slowScripts returns, per script SHA1, how many calls the nodes' slowlogs
// hold (every command is logged: slowlog-log-slower-than 0).
func slowScripts(t *testing.T, ctx context.Context, nodes []redis.UniversalClient) map[string]int {
	t.Helper()
	calls := map[string]int{}
	for _, n := range nodes {
		entries, err := n.SlowLogGet(ctx, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if len(e.Args) > 1 && (e.Args[0] == "evalsha" || e.Args[0] == "eval") {
				calls[e.Args[1]]++
			}
		}
	}
	return calls
}

// An uncontended writer's Lock costs one round trip — its grants' tokens
// come from the nodes' clocks, near each other — so a Lock and its Unlock
// run acquire.lua and release.lua on each node and nothing else; an owner
// that may nest (WithOwner) still writes the token back before Lock
// returns.
func TestUncontendedLockSkipsWriteBack(t *testing.T) {
	lab := redislab.Start(t, 5)
	lab.Trust(t, TrustStart)
	nodes := lab.Clients(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(nodes, WithAutoRenew(false), WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cycle := func(key string, opts ...Option) {
		t.Helper()
		l, err := c.TryLock(ctx, key, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle("warm-up") // scripts loaded, starts learnt
	for _, n := range nodes {
		n.ConfigSet(ctx, "slowlog-max-len", "100000")
		n.ConfigSet(ctx, "slowlog-log-slower-than", "0")
		n.Do(ctx, "SLOWLOG", "RESET")
	}
	const cycles = 20
	for i := range cycles {
		cycle(fmt.Sprintf("k%d", i))
	}
	// Every node has run its calls once they all answered; the late ones
	// are released when they answer — a grant that answered after Unlock's
	// round went out is released once more, so releases may exceed one per
	// node and cycle.
	want := 5 * cycles
	testkit.Eventually(t, 10*time.Second, "every acquire and release ran", func() bool {
		calls := slowScripts(t, ctx, nodes)
		return calls[acquireScript.sha] >= want && calls[releaseScript.sha] >= want
	})
	if n := slowScripts(t, ctx, nodes)[fenceScript.sha]; n != 0 {
		t.Errorf("%d write-backs (fence.lua) in %d uncontended cycles, want none", n, cycles)
	}
	for i := range cycles {
		cycle(fmt.Sprintf("o%d", i), WithOwner("job"))
	}
	if n := slowScripts(t, ctx, nodes)[fenceScript.sha]; n == 0 {
		t.Errorf("no write-back in %d cycles of an owner that may nest, want one where grants differ", cycles)
	}
}
