package lab_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/lab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// On five containers of the lab's image and settings, a lock held by one
// Client is refused to another, and granted to it once released. Skipped
// where no Docker engine is reachable.
func TestRedlockOnContainers(t *testing.T) {
	addrs := lab.StartContainers(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { c.Close() })
		if err := redlock.TrustStart(ctx, c); err != nil { // new masters: nothing to guard
			t.Fatalf("TrustStart %s: %v", a, err)
		}
		clients[i] = c
	}
	a, b := newClient(t, clients), newClient(t, clients)
	held, err := a.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	if _, err := b.TryLock(ctx, "job"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock while held = %v, want ErrNotObtained", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	next, err := b.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if next.Token() <= held.Token() {
		t.Errorf("token %d after %d: fencing tokens must grow", next.Token(), held.Token())
	}
	next.Unlock(ctx)
}

func newClient(t *testing.T, nodes []redis.UniversalClient) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
