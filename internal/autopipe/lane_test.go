package autopipe_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// noRetries is a client that never retries (MaxRetries -1): a sender then
// holds a connection of its own from batch to batch. Like the library's
// dedicated clients it has maintenance notifications off: in their default
// auto mode, go-redis (v9.23) falls back on a server without them by
// writing the shared *Options under each redis.Conn's own lock — a data
// race between held connections set up at once, seen under -race.
func noRetries(o *redis.Options) {
	o.MaxRetries = -1
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// A sender over a client that never retries holds its connection: batch
// after batch, it takes nothing from the pool (no pool look-up, no health
// check per batch).
func TestSenderHoldsItsConnection(t *testing.T) {
	lab := redislab.Start(t, 1)
	rdb := lab.Clients(t, noRetries)[0].(*redis.Client)
	p := newPipe(t, rdb, autopipe.WithHeldConnections())
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	before := rdb.PoolStats()
	const calls = 20
	for i := range calls {
		if err := p.Do(ctx, "incr", "held").Err(); err != nil {
			t.Fatalf("INCR %d: %v", i, err)
		}
	}
	after := rdb.PoolStats()
	// One take at most: the sender hands its connection back and takes one
	// again every few seconds, which a loaded machine may reach.
	if takes := poolTakes(after) - poolTakes(before); takes > 1 {
		t.Errorf("%d connections taken from the pool for %d batches, want the held one", takes, calls)
	}
}

// poolTakes counts the connections taken from a client's pools: the main
// one and the pipelines' one.
func poolTakes(s *redis.PoolStats) uint32 {
	n := s.Hits + s.Misses
	if s.PipelineStats != nil {
		n += s.PipelineStats.Hits + s.PipelineStats.Misses
	}
	return n
}

// A held connection that breaks is replaced: the batch on it fails with a
// connection error, the next goes out on a new one.
func TestHeldConnectionIsReplacedAfterAFailure(t *testing.T) {
	fp, rdb, _ := proxied(t, noRetries)
	p := newPipe(t, rdb, autopipe.WithHeldConnections())
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetRefuse(true)
	if err := p.Do(ctx, "ping").Err(); err == nil || isRedisError(err) {
		t.Fatalf("PING with the connections reset: %v, want a connection error", err)
	}
	fp.SetRefuse(false)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Errorf("PING once the proxy accepts again: %v, want PONG on a new connection", err)
	}
}

// A connection the server refused to set up is not held: once the server
// takes the client's password, the next call goes through.
func TestRefusedSetUpIsNotHeld(t *testing.T) {
	lab := redislab.Start(t, 1)
	rdb := lab.Clients(t, noRetries, func(o *redis.Options) { o.Password = "sesame" })[0]
	ctx := testkit.Context(t, 10*time.Second)
	requirepass(t, lab, "", "other")
	p := newPipe(t, rdb, autopipe.WithHeldConnections())
	err := p.Do(ctx, "ping").Err()
	if !errors.Is(err, autopipe.ErrSetup) || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("PING with a password the server does not take: %v, want ErrSetup naming WRONGPASS", err)
	}
	requirepass(t, lab, "other", "sesame")
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Errorf("PING once the server takes the password: %v, want PONG", err)
	}
}

// requirepass changes the password of lab's node from from to to, and back
// to none when t ends.
func requirepass(t *testing.T, lab *redislab.Lab, from, to string) {
	t.Helper()
	ctx := testkit.Context(t, 5*time.Second)
	c := lab.Clients(t, func(o *redis.Options) { o.Password = from })[0]
	if err := c.ConfigSet(ctx, "requirepass", to).Err(); err != nil {
		t.Fatalf("CONFIG SET requirepass: %v", err)
	}
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: lab.Addrs()[0], Password: to})
		defer c.Close()
		c.ConfigSet(testkit.Context(t, 5*time.Second), "requirepass", "")
	})
}

// A batch that ran out of time does not end the next: the sender's context
// is armed anew for each batch.
func TestBatchAfterAnExpiredBatch(t *testing.T) {
	fp, rdb, _ := proxied(t, func(o *redis.Options) { o.MaxRetries, o.ContextTimeoutEnabled = -1, true })
	p := newPipe(t, rdb, autopipe.WithHeldConnections(), autopipe.WithLateWindow(50*time.Millisecond))
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetBlackhole(true)
	late := make(chan error, 1)
	short := testkit.Context(t, 100*time.Millisecond)
	if err := p.DoLate(short, func(c *redis.Cmd) { late <- c.Err() }, "ping").Err(); !errors.Is(err, autopipe.ErrAbandoned) {
		t.Fatalf("PING into the blackhole: %v, want ErrAbandoned", err)
	}
	if err := <-late; err == nil {
		t.Fatal("late outcome of the PING into the blackhole: a reply, want its batch cut")
	}
	fp.SetBlackhole(false)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Errorf("PING after the blackhole: %v, want PONG", err)
	}
}

// Close hands the connections its senders held back to the client's pool.
func TestCloseHandsBackHeldConnections(t *testing.T) {
	lab := redislab.Start(t, 1)
	rdb := lab.Clients(t, noRetries)[0].(*redis.Client)
	p := autopipe.New(rdb, autopipe.WithHeldConnections(), autopipe.WithMaxInFlight(2))
	ctx := testkit.Context(t, 5*time.Second)
	for range 3 {
		goDo(ctx, p, "ping")
	}
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.Close()
	noLeftovers(t)
	if s := rdb.PoolStats(); s.TotalConns != s.IdleConns {
		t.Errorf("pool after Close: %d connections, %d idle; want none in use", s.TotalConns, s.IdleConns)
	}
}

// A held connection the server closed while it was idle is not written on:
// after a pause, the sender takes a connection from the pool again, whose
// health check finds the closed one (as after a server's restart).
func TestHeldConnectionClosedWhileIdle(t *testing.T) {
	lab := redislab.Start(t, 1)
	rdb := lab.Clients(t, noRetries)[0]
	direct := lab.Clients(t)[0]
	p := newPipe(t, rdb, autopipe.WithHeldConnections())
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := direct.Do(ctx, "client", "kill", "type", "normal", "skipme", "yes").Err(); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the pause itself (past the sender's idle bound), not an assertion
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Errorf("PING after a pause, its connection closed by the server: %v, want PONG on a healthy one", err)
	}
}
