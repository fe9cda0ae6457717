package redislab_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bounded makes a client honour context deadlines on its sockets.
func bounded(o *redis.Options) { o.ContextTimeoutEnabled = true }

func TestSetGetOnEveryNode(t *testing.T) {
	t.Parallel()
	lab := redislab.Start(t, 3)
	if got := len(lab.Addrs()); got != 3 {
		t.Fatalf("len(Addrs()) = %d, want 3", got)
	}
	ctx := testkit.Context(t, 5*time.Second)
	for i, c := range lab.Clients(t) {
		if err := c.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatalf("node %d: SET: %v", i, err)
		}
		got, err := c.Get(ctx, "k").Int()
		if err != nil || got != i {
			t.Fatalf("node %d: GET = %d, %v; want %d, nil", i, got, err, i)
		}
	}
}

func TestKillRefusesConnections(t *testing.T) {
	t.Parallel()
	lab := redislab.Start(t, 3)
	lab.RequireControl(t)
	victim := lab.Nodes[1]
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	_, err := net.DialTimeout("tcp", victim.Addr(), time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial killed node: err = %v, want ECONNREFUSED", err)
	}
	if err := victim.Kill(); err != nil {
		t.Errorf("second Kill: %v, want nil (no-op)", err)
	}
	if err := victim.Pause(); err == nil {
		t.Errorf("Pause of killed node: nil error, want one")
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kill    bool // Kill before Restart (else Restart kills)
		empty   bool
		wantKey bool
	}{
		{"after crash keeps appendonly keys", true, false, true},
		{"running node keeps appendonly keys", false, false, true},
		{"empty loses keys", true, true, false},
		{"empty without kill loses keys", false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lab := redislab.Start(t, 1)
			lab.RequireControl(t)
			node, c := lab.Nodes[0], lab.Clients(t)[0]
			ctx := testkit.Context(t, 10*time.Second)
			if err := c.Set(ctx, "lock", "owner", time.Minute).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			before := runID(ctx, t, node)
			if tt.kill {
				if err := node.Kill(); err != nil {
					t.Fatalf("Kill: %v", err)
				}
			}
			if err := node.Restart(tt.empty); err != nil {
				t.Fatalf("Restart(%v): %v", tt.empty, err)
			}
			if after := runID(ctx, t, node); after == before {
				t.Errorf("run_id %q unchanged by Restart", after)
			}
			n, err := c.Exists(ctx, "lock").Result()
			if err != nil || (n == 1) != tt.wantKey {
				t.Errorf("EXISTS lock = %d, %v; want key present %v", n, err, tt.wantKey)
			}
		})
	}
}

func runID(ctx context.Context, t *testing.T, n *redislab.Node) string {
	t.Helper()
	id, err := n.RunID(ctx)
	if err != nil || id == "" {
		t.Fatalf("RunID = %q, %v", id, err)
	}
	return id
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	lab := redislab.Start(t, 1)
	lab.RequireControl(t)
	node, c := lab.Nodes[0], lab.Clients(t, bounded)[0]
	if err := node.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	err := c.Ping(testkit.Context(t, 100*time.Millisecond)).Err()
	if err == nil {
		t.Fatalf("PING to paused node: nil error, want a timeout")
	}
	if err := node.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	lab := redislab.Start(t, 1, redislab.WithArgs("--appendfsync", "no"))
	got, err := lab.Clients(t)[0].ConfigGet(testkit.Context(t, 5*time.Second), "appendfsync").Result()
	if err != nil || got["appendfsync"] != "no" {
		t.Fatalf("CONFIG GET appendfsync = %v, %v; want no", got, err)
	}
}

// TestWrapper runs each node under a shell that forks redis-server and
// waits for it, as faketime does: Pause, Kill and Restart must reach the
// child, not only the wrapper.
func TestWrapper(t *testing.T) {
	t.Parallel()
	lab := redislab.Start(t, 1, redislab.WithWrapper("sh", "-c", `"$@"; exit $?`, "sh"))
	lab.RequireControl(t)
	node, c := lab.Nodes[0], lab.Clients(t, bounded)[0]
	if err := node.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := c.Ping(testkit.Context(t, 100*time.Millisecond)).Err(); err == nil {
		t.Fatalf("PING to paused child: nil error, want a timeout")
	}
	if err := node.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := net.DialTimeout("tcp", node.Addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial killed node: err = %v, want ECONNREFUSED", err)
	}
	if err := node.Restart(false); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
}

func TestFlushAll(t *testing.T) {
	t.Parallel()
	lab := redislab.Start(t, 2)
	ctx := testkit.Context(t, 5*time.Second)
	clients := lab.Clients(t)
	for _, c := range clients {
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}
	lab.FlushAll(t)
	for i, c := range clients {
		if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("node %d: DBSIZE = %d, %v; want 0", i, n, err)
		}
	}
}
