package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// BenchmarkTryLockManyUnlock measures one TryLockMany and its Unlock of n
// keys on three real masters, with a node timeout long enough never to
// trip: the figures behind MaxKeys (each node takes the keys in one script
// call, which must end well within DefaultNodeTimeout).
func BenchmarkTryLockManyUnlock(b *testing.B) {
	l := redislab.Start(b, 3)
	l.Trust(b, redlock.TrustStart)
	c := testkit.Open(b, redlock.New, l.Clients(b), redlock.WithNodeTimeout(5*time.Second), redlock.WithTTL(time.Minute))
	ctx := context.Background()
	for _, n := range []int{1, 64, redlock.MaxKeys} {
		keys := manyKeys(n)
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for b.Loop() {
				lk, err := c.TryLockMany(ctx, keys)
				if err != nil {
					b.Fatal(err)
				}
				if err := lk.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
