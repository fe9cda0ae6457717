package redlock_test

import (
	"context"
	"strconv"
	"strings"
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

// New talks through dedicated clients for a *redis.Client and a
// *redis.Ring, built from their options — hooks added to the given clients
// see none of the library's commands — and through the given client itself
// for a type of the caller's own.
func TestDedicatedClientsFromGivenOptions(t *testing.T) {
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

// The library's dedicated clients speak RESP2 (no push notifications to peek
// for), while the caller's client keeps its RESP3: every connection named
// as the given clients are, but the caller's own, says resp=2 in CLIENT
// LIST.
func TestDedicatedClientsSpeakRESP2(t *testing.T) {
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	const name = "resp-probe"
	cases := []struct {
		name string
		make func(addr string) redis.UniversalClient
	}{
		{"Client", func(addr string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, ClientName: name})
		}},
		{"Ring", func(addr string) redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": addr}, ClientName: name})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := make([]redis.UniversalClient, len(l.Nodes))
			for i, addr := range l.Addrs() {
				nodes[i] = tc.make(addr)
				t.Cleanup(func() { nodes[i].Close() })
			}
			c := newClient(t, nodes)
			ctx := ctxFor(t, 10*time.Second)
			if _, err := firstLock(ctx, c, "resp2", time.Now().Add(5*time.Second)); err != nil {
				t.Fatalf("lock: %v", err)
			}
			for _, addr := range l.Addrs() {
				checkRESP(ctx, t, addr, name)
			}
		})
	}
}

// checkRESP fails t unless the server at addr has at least one connection
// named name but the probe's own, each of them speaking RESP2, while the
// probe's (a caller's client with default options) speaks RESP3.
func checkRESP(ctx context.Context, t *testing.T, addr, name string) {
	t.Helper()
	probe := redis.NewClient(&redis.Options{Addr: addr, ClientName: name})
	defer probe.Close()
	conn := probe.Conn()
	defer conn.Close()
	id, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatalf("%s: CLIENT ID: %v", addr, err)
	}
	list, err := conn.ClientList(ctx).Result()
	if err != nil {
		t.Fatalf("%s: CLIENT LIST: %v", addr, err)
	}
	library := 0
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		switch {
		case f["id"] == strconv.FormatInt(id, 10):
			if f["resp"] != "3" {
				t.Errorf("%s: the caller's connection speaks resp=%s, want 3 (untouched)", addr, f["resp"])
			}
		case f["name"] == name:
			library++
			if f["resp"] != "2" {
				t.Errorf("%s: a library connection speaks resp=%s, want 2: %s", addr, f["resp"], line)
			}
		}
	}
	if library == 0 {
		t.Errorf("%s: no library connection in CLIENT LIST:\n%s", addr, list)
	}
}
