package autopipe_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// The tests run one at a time: several check, with goleak.Find, that a Pipe
// left no goroutine behind, which other tests' goroutines would disturb.
func TestMain(m *testing.M) {
	testkit.Main(m)
}

// newPipe returns a Pipe over rdb, closed in t.Cleanup (before rdb, which
// was registered earlier).
func newPipe(t testing.TB, rdb redis.UniversalClient, opts ...autopipe.Option) *autopipe.Pipe {
	t.Helper()
	p := autopipe.New(rdb, opts...)
	t.Cleanup(p.Close)
	return p
}

// proxied starts one node behind a fault proxy and returns the proxy, a
// client through it (tuned by tune, closed in t.Cleanup) and a client
// straight to the node.
func proxied(t *testing.T, tune func(*redis.Options)) (*faultproxy.Proxy, *redis.Client, *redis.Client) {
	t.Helper()
	lab := redislab.Start(t, 1)
	direct := lab.Clients(t)[0].(*redis.Client)
	fp := faultproxy.Start(t, lab.Addrs()[0])
	opt := &redis.Options{Addr: fp.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}
	if tune != nil {
		tune(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return fp, rdb, direct
}

// waitStats waits until the Pipe's stats satisfy cond, failing t after 5 s.
func waitStats(t *testing.T, p *autopipe.Pipe, what string, cond func(autopipe.Stats) bool) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, what, func() bool { return cond(p.Stats()) })
}

// noLeftovers fails t unless every goroutine of package autopipe has ended
// within a few seconds: its senders and its late callbacks. (goleak in
// TestMain checks everything at the end; here the test's own lab and clients
// are still running.)
func noLeftovers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := pipeGoroutines()
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of package autopipe left running:\n%s", left)
		}
		time.Sleep(5 * time.Millisecond) // polling, not an assertion
	}
}

// pipeGoroutines returns the stacks of the goroutines that a Pipe started.
func pipeGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/autopipe.(*Pipe).send") || strings.Contains(g, "internal/autopipe.(*Pipe).deliver.func") {
			left = append(left, g)
		}
	}
	return strings.Join(left, "\n\n")
}
