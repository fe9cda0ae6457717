package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// inspect runs redlock.Inspect, failing t on its error.
func inspect(t *testing.T, nodes []redis.UniversalClient, key string, limit int) redlock.Inspection {
	t.Helper()
	in, err := redlock.Inspect(testkit.Context(t, 5*time.Second), nodes, key, limit)
	if err != nil {
		t.Fatalf("Inspect(%q, %d): %v", key, limit, err)
	}
	if len(in.Nodes) != len(nodes) {
		t.Fatalf("Inspect(%q): %d nodes, want %d", key, len(in.Nodes), len(nodes))
	}
	return in
}

// TestInspect reads a held lock, a reader, a semaphore's permit and its
// waiter, and a free key, as the library wrote them on real masters.
func TestInspect(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := testkit.Context(t, 30*time.Second)
	const ttl = 10 * time.Second

	free := inspect(t, nodes, "inspect-free", 0)
	for i, n := range free.Nodes {
		if n.Err != nil || n.Writer != (redlock.HoldState{}) || len(n.Readers) != 0 || n.Limit != 0 || n.Waiters != 0 || n.Record != 0 {
			t.Errorf("free key, node %d: %+v", i, n)
		}
		if !n.Start.Known || !n.Start.Vouched || n.RunID == "" || n.StartErr != nil || n.Cluster {
			t.Errorf("free key, node %d: start %+v, run_id %q, %v (the lab is vouched for)", i, n.Start, n.RunID, n.StartErr)
		}
	}

	l, err := c.Lock(ctx, "inspect-held", redlock.WithOwner("writer"), redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	held := inspect(t, nodes, "inspect-held", 0)
	if held.Names != redlock.Keys(redlock.DefaultPrefix, "inspect-held") {
		t.Errorf("names %+v", held.Names)
	}
	// The token is the largest the majority issued; a node behind it may
	// be raised after Lock returns, one that granted late issued more.
	// Only a majority is sure to have granted it when Lock returns.
	var fence int64
	majority(t, "the held lock", held, func(n redlock.NodeInspection) bool {
		w := n.Writer
		fence = max(fence, w.Fence)
		return w.Owner == "writer" && w.Holds == 1 && w.TTL > 0 && w.TTL <= ttl && w.Fence > 0 && n.Record == ttl
	})
	if fence < l.Token() {
		t.Errorf("largest fencing counter %d, below the token %d", fence, l.Token())
	}

	if _, err := c.RLock(ctx, "inspect-read", redlock.WithOwner("reader")); err != nil {
		t.Fatal(err)
	}
	majority(t, "the reader", inspect(t, nodes, "inspect-read", 0), func(n redlock.NodeInspection) bool {
		return len(n.Readers) == 1 && strings.HasPrefix(n.Readers[0], "reader") && n.Writer.Owner == ""
	})

	inspectSemaphore(t, c, nodes)
}

// inspectSemaphore takes the one permit of a semaphore, puts a second
// caller in line, and checks that Inspect sees both.
func inspectSemaphore(t *testing.T, c *redlock.Client, nodes []redis.UniversalClient) {
	ctx := testkit.Context(t, 30*time.Second)
	if _, err := c.Acquire(ctx, "inspect-sem", 1, redlock.WithOwner("permit")); err != nil {
		t.Fatal(err)
	}
	majority(t, "the permit", inspect(t, nodes, "inspect-sem", 1), func(n redlock.NodeInspection) bool {
		return n.Limit == 1 && n.Waiters == 0 && len(n.Permits) == 1 && n.Permits[0].Owner == "permit" && n.Permits[0].Holds == 1 &&
			n.Permits[0].TTL > 0 && n.Record > 0 && n.Writer.Owner == ""
	})

	waitCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if l, err := c.Acquire(waitCtx, "inspect-sem", 1, redlock.WithOwner("waiter")); err == nil {
			t.Errorf("the waiter got permit %s while it was held", l.Key())
		}
	})
	defer wg.Wait()
	defer stop()
	testkit.Eventually(t, 10*time.Second, "the waiter in line on a majority", func() bool {
		k := 0
		for _, n := range inspect(t, nodes, "inspect-sem", 1).Nodes {
			if n.Waiters == 1 {
				k++
			}
		}
		return k >= 2
	})
}

// majority fails t unless what holds on a majority of in's nodes; every
// node must have answered.
func majority(t *testing.T, what string, in redlock.Inspection, holds func(redlock.NodeInspection) bool) {
	t.Helper()
	k := 0
	for i, n := range in.Nodes {
		if n.Err != nil {
			t.Errorf("%s: node %d: %v", what, i, n.Err)
		}
		if holds(n) {
			k++
		}
	}
	if k < len(in.Nodes)/2+1 {
		t.Errorf("%s: seen on %d of %d nodes: %+v", what, k, len(in.Nodes), in.Nodes)
	}
}

// TestInspectNodeThatCannotAnswer: a node that refuses connections has its
// error; the others are read all the same.
func TestInspectNodeThatCannotAnswer(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	if _, err := c.Lock(testkit.Context(t, 10*time.Second), "inspect-down", redlock.WithOwner("w")); err != nil {
		t.Fatal(err)
	}
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { down.Close() })
	in := inspect(t, append(nodes, down), "inspect-down", 0)
	if in.Nodes[3].Err == nil || in.Nodes[3].Writer.Owner != "" {
		t.Errorf("unreachable node: %+v, want an error", in.Nodes[3])
	}
	for i, n := range in.Nodes[:3] {
		if n.Err != nil || n.Writer.Owner != "w" {
			t.Errorf("node %d: %+v", i, n)
		}
	}
}

func TestInspectRefusesBadInput(t *testing.T) {
	node := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { node.Close() })
	nodes := []redis.UniversalClient{node}
	cases := []struct {
		name  string
		nodes []redis.UniversalClient
		key   string
		limit int
		opts  []redlock.Option
	}{
		{"no nodes", nil, "k", 0, nil},
		{"nil node", []redis.UniversalClient{node, nil}, "k", 0, nil},
		{"empty key", nodes, "", 0, nil},
		{"long key", nodes, strings.Repeat("k", redlock.MaxKeyLen+1), 0, nil},
		{"negative limit", nodes, "k", -1, nil},
		{"limit over MaxLimit", nodes, "k", redlock.MaxLimit + 1, nil},
		{"bad prefix", nodes, "k", 0, []redlock.Option{redlock.WithPrefix("a{b")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redlock.Inspect(context.Background(), tc.nodes, tc.key, tc.limit, tc.opts...)
			if !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want a one-line redlock: ErrInvalid", err)
			}
		})
	}
}
