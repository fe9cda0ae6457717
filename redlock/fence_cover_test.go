package redlock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// atToken returns the nodes among the first three whose fencing counter of
// key has reached token: those the next holder must do without to meet only
// counters left behind.
func atToken(t *testing.T, nodes []redis.UniversalClient, key string, token int64) []int {
	t.Helper()
	var at []int
	for i, n := range nodes[:3] {
		v, err := n.Get(t.Context(), redlock.Keys(redlock.DefaultPrefix, key).Fence).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if c, _ := strconv.ParseInt(v, 10, 64); c >= token {
			at = append(at, i)
		}
	}
	return at
}

// Without a write-back round, the next holding's token is larger all the
// same (a reader's at least as large) when the next majority meets only
// counters left behind the token: nodes 3 and 4, held by another owner
// while the first Lock is granted by nodes 0 to 2, keep a small counter of
// an old holding, and the nodes that reached the token are paused. After
// Unlock the counters it raised, after the lease ran out the nodes' clocks
// (a reader takes the larger of counter and clock: counter_held) are above
// the token (docs/SAFETY.md, "Tokens without a write-back round").
func TestNextTokenLargerWithoutWriteBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		unlock bool
		reader bool
	}{
		{"writer after Unlock", true, false},
		{"writer after expiry", false, false},
		{"reader after Unlock", true, true},
		{"reader after expiry", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, nodes, l := lab(t, 5, redlock.WithAutoRenew(false), redlock.WithTTL(time.Second),
				redlock.WithNodeTimeout(200*time.Millisecond))
			l.RequireControl(t)
			ctx := ctxFor(t, time.Minute)
			ks := redlock.Keys(redlock.DefaultPrefix, "k")
			for _, n := range nodes[3:] {
				n.HSet(ctx, ks.Lock, "owner", "other")
				n.Set(ctx, ks.Fence, 1, time.Hour)
			}
			first, err := c.Lock(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			at := atToken(t, nodes, "k", first.Token())
			if len(at) > 1 {
				t.Skipf("%d nodes granted the same token: none is behind", len(at))
			}
			if tc.unlock {
				if err := first.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				eventually(t, 5*time.Second, "the lease ran out", func() bool { return countHeld(t, nodes[:3], "k") == 0 })
			}
			l.Pause(t, at...)
			for _, n := range nodes[3:] {
				n.Del(ctx, ks.Lock)
			}
			var next *redlock.Lock
			if tc.reader {
				next, err = c.RLock(ctx, "k")
			} else {
				next, err = c.Lock(ctx, "k")
			}
			if err != nil {
				t.Fatal(err)
			}
			defer next.Unlock(ctx)
			if next.Token() < first.Token() || (!tc.reader && next.Token() == first.Token()) {
				t.Errorf("token %d after %d", next.Token(), first.Token())
			}
		})
	}
}
