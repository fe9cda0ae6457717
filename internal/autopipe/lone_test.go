package autopipe_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// A lone call written by Process (WithLoneProcess) on a connection the
// server refuses to set up fails with the server's answer as ErrSetup and
// ErrNotSent, as a pipeline's calls do (TestSetupFailureReachesEveryCall):
// Process alone would return that answer as the command's own error.
func TestLoneCallRefusedSetUp(t *testing.T) {
	lab := redislab.Start(t, 1)
	cases := []struct {
		name string
		tune func(*redis.Options)
		opts []autopipe.Option
		want string
	}{
		{"DB it does not have", func(o *redis.Options) { o.DB = 99 }, nil, "DB index is out of range"},
		{"wrong password", func(o *redis.Options) { o.Password = "wrong" }, nil, "WRONGPASS"},
		{"wrong password, held", func(o *redis.Options) { o.Password = "wrong"; o.MaxRetries = -1 },
			[]autopipe.Option{autopipe.WithHeldConnections()}, "WRONGPASS"},
	}
	requirepass(t, lab, "", "sesame")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdb := lab.Clients(t, func(o *redis.Options) { o.Password = "sesame" }, tc.tune)[0]
			p := newPipe(t, rdb, append(tc.opts, autopipe.WithLoneProcess())...)
			ctx := testkit.Context(t, 5*time.Second)
			err := p.Do(ctx, "incr", "n").Err()
			if !errors.Is(err, autopipe.ErrSetup) || !errors.Is(err, autopipe.ErrNotSent) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("lone INCR: err = %v, want ErrSetup and ErrNotSent naming %q", err, tc.want)
			}
			if p.Stats().Batches != 1 {
				t.Errorf("batches = %d, want 1", p.Stats().Batches)
			}
		})
	}
	n, err := lab.Clients(t, func(o *redis.Options) { o.Password = "sesame" })[0].Get(context.Background(), "n").Result()
	if !errors.Is(err, redis.Nil) {
		t.Errorf("GET n = %q, %v: an INCR whose connection was refused ran", n, err)
	}
}

// The error reply to a lone call's own command stays its own, not ErrSetup,
// also on a connection set up for it — whose set-up ran commands that
// failed, but whose handshake went through: an OnConnect that reads a key
// of the wrong type and goes on.
func TestLoneCallErrorReplyIsTheCommands(t *testing.T) {
	lab := redislab.Start(t, 1)
	ctx := testkit.Context(t, 5*time.Second)
	if err := lab.Clients(t)[0].HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := lab.Clients(t, func(o *redis.Options) {
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			_ = cn.Get(ctx, "h").Err() // WRONGTYPE, dropped
			return nil
		}
	})[0]
	p := newPipe(t, rdb, autopipe.WithLoneProcess())
	for _, args := range [][]any{{"lpush", "h", "x"}, {"evalsha", strings.Repeat("0", 40), 0}} {
		err := p.Do(ctx, args...).Err()
		var reply redis.Error
		if !errors.As(err, &reply) || errors.Is(err, autopipe.ErrSetup) || errors.Is(err, autopipe.ErrNotSent) {
			t.Errorf("%v: err = %v, want the server's error reply, not ErrSetup", args[0], err)
		}
	}
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Errorf("PING after two error replies: %v", err)
	}
}

// A lone call costs fewer allocations by Process than as a one-command
// pipeline: the point of WithLoneProcess.
func TestLoneCallAllocatesLess(t *testing.T) {
	lab := redislab.Start(t, 1)
	ctx := context.Background()
	allocs := func(opts ...autopipe.Option) float64 {
		p := newPipe(t, lab.Clients(t)[0], opts...)
		for range 10 { // set up the connection and the sender
			if err := p.Do(ctx, "ping").Err(); err != nil {
				t.Fatal(err)
			}
		}
		return testing.AllocsPerRun(200, func() {
			if err := p.Do(ctx, "ping").Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	pipeline, lone := allocs(), allocs(autopipe.WithLoneProcess())
	t.Logf("allocations per lone PING: %.1f as a pipeline, %.1f by Process", pipeline, lone)
	if lone > pipeline-2 {
		t.Errorf("a lone PING made %.1f allocations by Process, %.1f as a pipeline: want at least 2 fewer", lone, pipeline)
	}
}
