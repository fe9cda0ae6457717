package chaos_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Settings shared by the scenarios: leases short enough that a scenario
// lasts a few seconds, a node timeout with room for the race detector.
const (
	ttl         = 500 * time.Millisecond
	nodeTimeout = 50 * time.Millisecond
)

// startLab starts n masters that the test controls (Kill, Restart, Pause).
// They run under the "env" wrapper: the lab then always starts local
// processes, never containers or REDLOCK_ADDRS servers, which cannot be
// killed. Extra options (faketime) replace that wrapper.
func startLab(t *testing.T, n int, opts ...redislab.Option) *redislab.Lab {
	t.Helper()
	opts = append([]redislab.Option{redislab.WithWrapper("env")}, opts...)
	lab := redislab.Start(t, n, opts...)
	lab.Trust(t, redlock.TrustStart)
	lab.RequireControl(t)
	return lab
}

// newClient returns a redlock Client over nodes, closed in Cleanup (before
// the redis clients, which were registered earlier).
func newClient(t *testing.T, nodes []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return testkit.Open(t, redlock.New, nodes, labOptions(opts)...)
}

// labOptions returns the scenarios' settings (ttl, nodeTimeout) followed by
// opts, which override them.
func labOptions(opts []redlock.Option) []redlock.Option {
	return append([]redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout)}, opts...)
}

// warmUp makes each client lock and unlock key "warm-up" once, waiting up
// to warmWait, so that it has met every master it reaches and pooled
// connections to them: a cold client's first call dials, handshakes and asks
// ROLE, which a loaded machine may not fit in one node timeout. An Unlock
// that no majority confirmed is no matter: that lock expires by itself.
func warmUp(t *testing.T, clients ...*redlock.Client) {
	t.Helper()
	for i, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), warmWait)
		l, err := c.Lock(ctx, "warm-up")
		if err == nil {
			l.Unlock(ctx)
		}
		cancel()
		if err != nil {
			t.Fatalf("warm-up of client %d: %v", i, err)
		}
	}
}

// warmWait bounds each client's warm-up.
const warmWait = 10 * time.Second

// rivalTry makes one TryLock by a rival client. An unexpected success is
// recorded as a hold, so that the checker counts the overlap, and reported.
func rivalTry(t *testing.T, ctx context.Context, rec *chaos.Recorder, rival *redlock.Client, key string) {
	t.Helper()
	l, err := rival.TryLock(ctx, key, redlock.WithAutoRenew(false))
	switch {
	case err == nil:
		rec.Hold(ctx, "rival", l, func(context.Context) {})
		t.Errorf("rival obtained %q (token %d) while it was held", key, l.Token())
	case !errors.Is(err, redlock.ErrNotObtained):
		t.Errorf("rival TryLock: %v, want ErrNotObtained", err)
	}
}

// report checks the recorded history, logs its figures and fails t on any
// overlap.
func report(t *testing.T, rec *chaos.Recorder) chaos.Report {
	t.Helper()
	rep := chaos.Check(rec.History())
	t.Logf("%s: %s", t.Name(), &rep)
	if n := len(rep.Overlaps); n > 0 {
		t.Errorf("%d overlapping holds, want 0", n)
	}
	return rep
}
