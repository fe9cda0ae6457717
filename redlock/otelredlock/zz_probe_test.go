package otelredlock_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestProbeNodeErrors(t *testing.T) {
	lab := redislab.Start(t, 3)
	c, _ := redlock.New(lab.Clients(t), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	defer c.Close()
	ctx := context.Background()
	for range 2000 {
		l, err := c.TryLock(ctx, "bench")
		if err != nil {
			t.Fatal(err)
		}
		l.Unlock(ctx)
	}
}
