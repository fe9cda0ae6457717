package redlocktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// A frozen master processes nothing, as a stopped process: a command sent
// meanwhile is not applied until Thaw.
func TestFreezeHoldsRequests(t *testing.T) {
	c := Start(t, 1)
	m := c.masters[0]
	node := c.Clients()[0]
	ctx := context.Background()
	if err := node.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c.Freeze(0)
	done := make(chan error, 1)
	go func() { done <- node.Set(ctx, "k", "v", 0).Err() }()
	time.Sleep(100 * time.Millisecond) // time for the SET to arrive
	m.mu.Lock()
	srv := m.proc.srv
	m.mu.Unlock()
	if v, err := srv.Get("k"); !errors.Is(err, miniredis.ErrKeyNotFound) || v != "" {
		t.Fatalf("while frozen: k = %q, %v; want the SET not applied", v, err)
	}
	c.Thaw(0)
	if err := <-done; err != nil {
		t.Fatalf("SET after Thaw = %v", err)
	}
	if v, _ := srv.Get("k"); v != "v" {
		t.Fatalf("after Thaw: k = %q; want v", v)
	}
}
