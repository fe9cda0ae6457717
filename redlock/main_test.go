package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestMain(m *testing.M) {
	testkit.Main(m)
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
// about timeouts (see testkit.NodeTimeout). Tests about timeouts set their
// own, after it.
const testNodeTimeout = testkit.NodeTimeout

func newClient(t *testing.T, nodes []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return testkit.Open(t, redlock.New, nodes, append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}, opts...)...)
}

// holders returns, per node, the owner stored in key's lock ("" if none).
func holders(t *testing.T, nodes []redis.UniversalClient, key string) []string {
	t.Helper()
	return testkit.Owners(t, nodes, redlock.Keys(redlock.DefaultPrefix, key).Lock)
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

// inLine returns on how many nodes owner waits in key's line; with owner
// "", on how many anyone does.
func inLine(t *testing.T, nodes []redis.UniversalClient, key, owner string) int {
	t.Helper()
	queue := redlock.Keys(redlock.DefaultPrefix, key).Queue
	return testkit.Count(nodes, func(n redis.UniversalClient) bool {
		if owner == "" {
			return testkit.QueueLen(t, n, queue) > 0
		}
		return testkit.Queued(t, n, queue, owner)
	})
}

// listening returns on how many nodes someone is subscribed to key's
// channel, on which a release is announced.
func listening(t *testing.T, nodes []redis.UniversalClient, key string) int {
	t.Helper()
	channel := redlock.Keys(redlock.DefaultPrefix, key).Channel
	return testkit.Count(nodes, func(n redis.UniversalClient) bool { return testkit.Subscribers(t, n, channel) > 0 })
}

// The package's short names for testkit's waits, used by every test file.
var (
	eventually = testkit.Eventually // waits until cond holds, failing the test after d
	ctxFor     = testkit.Context    // a context that ends after d, or with the test
)

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

// requireLost fails t unless l is lost: Extend reports ErrLockLost, Done is
// closed, and Unlock reports ErrLockLost.
func requireLost(t *testing.T, ctx context.Context, l *redlock.Lock) {
	t.Helper()
	if err := l.Extend(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend = %v, want ErrLockLost", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after the loss")
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Unlock = %v, want ErrLockLost", err)
	}
}
