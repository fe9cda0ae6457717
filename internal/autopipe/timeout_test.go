package autopipe_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// slack bounds how long past its own deadline a call may return: wide, for a
// loaded two-core machine under -race; a call stuck behind the client's
// ReadTimeout would take seconds.
const slack = 500 * time.Millisecond

// TestTimeoutHoldsWithABlackholedMaster: with a client that ignores context
// deadlines on its sockets (ReadTimeout 2 s), each call to a blackholed
// master still returns at its own 30 ms deadline, and a Pipe over a healthy
// master answers meanwhile. Overdue batches keep their slot here
// (WithMaxOverdue(0)), so that calls queue behind the stuck one.
func TestTimeoutHoldsWithABlackholedMaster(t *testing.T) {
	lab := redislab.Start(t, 2)
	direct := lab.Clients(t)
	fp := faultproxy.Start(t, lab.Addrs()[0])
	rdb := redis.NewClient(&redis.Options{Addr: fp.Addr(), ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	p, healthy := newPipe(t, rdb, autopipe.WithMaxOverdue(0)), newPipe(t, direct[1])
	for _, q := range []*autopipe.Pipe{p, healthy} {
		if err := q.Do(testkit.Context(t, 5*time.Second), "ping").Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
	}

	fp.SetBlackhole(true)
	late := make(chan *redis.Cmd, 1)
	ctx := testkit.Context(t, 30*time.Millisecond)
	start := time.Now()
	err := p.DoLate(ctx, func(c *redis.Cmd) { late <- c }, "incr", "stuck").Err()
	if took := time.Since(start); !errors.Is(err, autopipe.ErrAbandoned) || !errors.Is(err, context.DeadlineExceeded) || took > 30*time.Millisecond+slack {
		t.Fatalf("INCR through a blackhole: %v after %v, want ErrAbandoned and deadline exceeded after about 30ms", err, took)
	}
	// The batch is stuck; calls behind it end at their own deadlines, unsent.
	for range 3 {
		start := time.Now()
		err := p.Do(testkit.Context(t, 30*time.Millisecond), "incr", "queued").Err()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 30*time.Millisecond+slack {
			t.Fatalf("INCR behind the stuck batch: %v after %v, want deadline exceeded after about 30ms", err, took)
		}
	}
	start = time.Now()
	if err := healthy.Do(testkit.Context(t, 5*time.Second), "ping").Err(); err != nil || time.Since(start) > slack {
		t.Errorf("PING to the healthy master: %v after %v, want PONG at once", err, time.Since(start))
	}
	if s := p.Stats(); s.InFlight != 1 || s.Queued != 3 {
		t.Errorf("blackholed pipe: %+v, want 1 batch in flight and 3 calls queued", s)
	}

	fp.SetBlackhole(false)
	// go-redis retries the timed-out batch on a new connection, which now
	// works: the late callback sees the INCR's real reply.
	select {
	case c := <-late:
		var ne net.Error
		if n, err := c.Int64(); !(err == nil && n == 1) && !(errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("late outcome: %d, %v; want the reply 1 or a read timeout", n, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("late callback never called")
	}
	waitStats(t, p, "the queued calls skipped", func(s autopipe.Stats) bool { return s.Skipped == 3 })
	if n, err := direct[0].Exists(testkit.Context(t, 5*time.Second), "queued").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS queued = %d, %v; want 0: calls whose ctx ended while queued are never sent", n, err)
	}
}

// TestLateReplyIsDelivered: a call that gave up before its slow reply came
// learns the real outcome through its late callback; a plain Do's late reply
// is read and dropped; the connection stays in step either way.
func TestLateReplyIsDelivered(t *testing.T) {
	fp, rdb, direct := proxied(t, nil)
	p := newPipe(t, rdb)
	if err := p.Do(testkit.Context(t, 5*time.Second), "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetLatency(0, 800*time.Millisecond)
	late := make(chan *redis.Cmd, 1)
	ctx := testkit.Context(t, 30*time.Millisecond)
	start := time.Now()
	if err := p.DoLate(ctx, func(c *redis.Cmd) { late <- c }, "incr", "late").Err(); !errors.Is(err, autopipe.ErrAbandoned) || time.Since(start) > slack {
		t.Fatalf("INCR with a slow reply: %v after %v, want ErrAbandoned after about 30ms", err, time.Since(start))
	}
	select {
	case c := <-late:
		if n, err := c.Int64(); err != nil || n != 1 {
			t.Errorf("late outcome: %d, %v; want the reply 1", n, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("late callback never called")
	}
	if err := p.Do(testkit.Context(t, 30*time.Millisecond), "incr", "late").Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("plain Do with a slow reply: %v, want deadline exceeded", err)
	}
	waitStats(t, p, "both late replies read", func(s autopipe.Stats) bool { return s.Late == 2 && s.InFlight == 0 })
	fp.SetLatency(0, 0)
	if got, err := p.Do(testkit.Context(t, 5*time.Second), "echo", "in step").Text(); err != nil || got != "in step" {
		t.Errorf("ECHO after late replies = %q, %v; want its own reply", got, err)
	}
	if n, err := direct.Get(testkit.Context(t, 5*time.Second), "late").Int(); err != nil || n != 2 {
		t.Errorf("GET late = %d, %v; want 2: both INCRs landed", n, err)
	}
}

// TestExpiredCallIsNotSent: a call whose ctx ends while it waits for its
// batch is never written; its late callback says so. A call whose ctx has
// already ended is refused at once, and its late callback never runs.
func TestExpiredCallIsNotSent(t *testing.T) {
	fp, rdb, direct := proxied(t, nil)
	p := newPipe(t, rdb)
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetLatency(0, 300*time.Millisecond)
	blocker := goDo(ctx, p, "ping")
	waitStats(t, p, "the first batch in flight", func(s autopipe.Stats) bool { return s.InFlight == 1 })
	late := make(chan *redis.Cmd, 1)
	short := testkit.Context(t, 30*time.Millisecond)
	if err := p.DoLate(short, func(c *redis.Cmd) { late <- c }, "set", "never", "v").Err(); !errors.Is(err, autopipe.ErrAbandoned) {
		t.Fatalf("SET queued behind a slow batch: %v, want ErrAbandoned", err)
	}
	c := <-late
	if err := c.Err(); !errors.Is(err, autopipe.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("late outcome: %v, want ErrNotSent and deadline exceeded", err)
	}
	if err := (<-blocker).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if n, err := direct.Exists(ctx, "never").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS never = %d, %v; want 0", n, err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.DoLate(cancelled, func(*redis.Cmd) { t.Error("late called for a call refused at once") }, "set", "never", "v").Err()
	if !errors.Is(err, autopipe.ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a cancelled ctx: %v, want ErrNotSent and context.Canceled", err)
	}
	if s := p.Stats(); s.Skipped != 1 || s.Late != 1 || s.Sent != 2 {
		t.Errorf("stats = %+v, want 2 sent, 1 skipped (late)", s)
	}
}

// lateDone is a context whose deadline passes well before its Done closes,
// as a caller's does when its goroutine is starved past its deadline.
type lateDone struct {
	context.Context
	at time.Time
}

func (c lateDone) Deadline() (time.Time, bool) { return c.at, true }
func (c lateDone) Err() error {
	if time.Now().Before(c.at) {
		return nil
	}
	return context.DeadlineExceeded
}

// A call still waited for whose batch ends in a context error (the batch's
// own deadline, on a dead server) gets that error as its outcome: it does
// not match ErrAbandoned, and no late callback follows — a caller waiting
// for one would wait forever (the soak's hung Close).
func TestContextErrorOutcomeIsNotAbandoned(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: 5, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	p := autopipe.New(rdb, autopipe.WithLateWindow(10*time.Millisecond))
	t.Cleanup(p.Close)
	parent, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ctx := lateDone{Context: parent, at: time.Now().Add(20 * time.Millisecond)}
	called := make(chan struct{}, 1)
	err := p.DoLate(ctx, func(*redis.Cmd) { called <- struct{}{} }, "ping").Err()
	if err == nil || errors.Is(err, autopipe.ErrAbandoned) {
		t.Fatalf("PING to a refused address = %v, want its real error, not ErrAbandoned", err)
	}
	p.Close() // waits for any late callback
	select {
	case <-called:
		t.Fatal("a late callback came for a call whose outcome its caller already had")
	default:
	}
}
