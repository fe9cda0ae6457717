package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, redislab.LeakIgnores()...)
}

// lab starts n masters and returns a Client over them (closed in Cleanup,
// before the redis clients), plus the redis clients for direct inspection.
func lab(t *testing.T, n int, opts ...redlock.Option) (*redlock.Client, []redis.UniversalClient, *redislab.Lab) {
	t.Helper()
	l := redislab.Start(t, n)
	l.Trust(t, redlock.TrustStart)
	nodes := l.Clients(t)
	return newClient(t, nodes, opts...), nodes, l
}

// testNodeTimeout replaces the default node timeout in tests that are not
// about timeouts: the suite runs under -race on a shared two-core machine,
// where a loopback call can take tens of milliseconds. Tests about timeouts
// set their own, after it.
const testNodeTimeout = 150 * time.Millisecond

func newClient(t *testing.T, nodes []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// holders returns, per node, the owner stored in key's lock ("" if none).
func holders(t *testing.T, nodes []redis.UniversalClient, key string) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		v, err := n.HGet(context.Background(), redlock.DefaultPrefix+"{"+key+"}", "owner").Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("node %d: HGET: %v", i, err)
		}
		out[i] = v
	}
	return out
}

// countHeld returns how many nodes hold key's lock for anyone.
func countHeld(t *testing.T, nodes []redis.UniversalClient, key string) int {
	t.Helper()
	n := 0
	for _, h := range holders(t, nodes, key) {
		if h != "" {
			n++
		}
	}
	return n
}

// eventually waits until cond holds, failing the test after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	redislab.Eventually(t, d, what, cond)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func splitLines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// containsField reports whether a CLIENT LIST line has the field (e.g. "sub=0").
func containsField(line, field string) bool {
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, field) && (strings.HasSuffix(field, "=") || f == field) {
			return true
		}
	}
	return false
}
