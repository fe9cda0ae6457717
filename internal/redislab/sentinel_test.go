package redislab_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// A sentinel set serves through a failover client, and after Failover the
// sentinels name the former replica, which serves what the old master had.
func TestSentinelFailover(t *testing.T) {
	s := redislab.StartSentinel(t, "quorum", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client(t)
	if err := c.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	if err := c.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatalf("WAIT for the replica: %v", err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	addr, err := s.MasterAddr(ctx)
	if err != nil || addr != s.Lab.Nodes[1].Addr() {
		t.Fatalf("master after failover = %q, %v; want the former replica %s", addr, err, s.Lab.Nodes[1].Addr())
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "before" {
		t.Fatalf("GET through the failover client after failover = %q, %v; want %q", v, err, "before")
	}
}
