package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A master whose connections take longer to set up than one call may wait
// (here the caller's OnConnect takes 200 ms, beyond the 25 ms node timeout
// plus its 100 ms late window) still becomes usable: after a call without
// an answer, a connection is set up in the background under a budget of its
// own, and later calls use it.
func TestSlowConnectionSetupStillConnects(t *testing.T) {
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	nodes := l.Clients(t, func(o *redis.Options) {
		o.OnConnect = func(ctx context.Context, _ *redis.Conn) error {
			select {
			case <-time.After(200 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	c := newClient(t, nodes, redlock.WithNodeTimeout(25*time.Millisecond))
	ctx := ctxFor(t, 30*time.Second)
	took, err := firstLock(ctx, c, "slow-setup", time.Now().Add(5*time.Second))
	t.Logf("first lock after %v", took)
	if err != nil {
		t.Fatalf("no lock within %v over masters whose connections take 200 ms to set up: %v", took, err)
	}
}

// New talks through clients of its own for a *redis.Client and a
// *redis.Ring, built from their options — hooks added to the given clients
// see none of the library's commands — and through the given client itself
// for a type of the caller's own.
func TestOwnClientsFromGivenOptions(t *testing.T) {
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	cases := []struct {
		name   string
		make   func(addr string) redis.UniversalClient
		wrap   bool
		hooked bool // whether the hook must see the library's commands
	}{
		{"Client", func(addr string) redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }, false, false},
		{"Ring", func(addr string) redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": addr}})
		}, false, false},
		{"a caller's own type", func(addr string) redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seen countHook
			nodes := make([]redis.UniversalClient, len(l.Nodes))
			for i, addr := range l.Addrs() {
				rdb := tc.make(addr)
				t.Cleanup(func() { rdb.Close() })
				rdb.AddHook(&seen)
				nodes[i] = rdb
				if tc.wrap {
					nodes[i] = asIs{rdb}
				}
			}
			c := newClient(t, nodes)
			ctx := ctxFor(t, 10*time.Second)
			if _, err := firstLock(ctx, c, "own", time.Now().Add(5*time.Second)); err != nil {
				t.Fatalf("lock: %v", err)
			}
			if got := seen.n.Load(); (got > 0) != tc.hooked {
				t.Errorf("the given clients' hook saw %d commands, want them seen: %v", got, tc.hooked)
			}
		})
	}
}

// countHook counts the commands, alone or pipelined, of the clients it is
// added to.
type countHook struct{ n atomic.Int64 }

func (*countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
