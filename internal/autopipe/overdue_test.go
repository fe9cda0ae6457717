package autopipe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// TestOverdueBatchLetsTheNextGo: a batch whose request a blackhole swallowed
// is never answered; once its caller's deadline has passed, the next call
// goes out on another connection and, the blackhole healed, is answered at
// once — not after the client's ReadTimeout (here 3 s, and go-redis's
// retries) ends the stuck batch. The stuck batch is still read to its end:
// its late callback comes.
func TestOverdueBatchLetsTheNextGo(t *testing.T) {
	fp, rdb, _ := proxied(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 3*time.Second, 2 })
	p := newPipe(t, rdb)
	if err := p.Do(testkit.Context(t, 5*time.Second), "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	before := fp.Discarded()
	fp.SetBlackhole(true)
	late := make(chan *redis.Cmd, 1)
	err := p.DoLate(testkit.Context(t, 30*time.Millisecond), func(c *redis.Cmd) { late <- c }, "incr", "swallowed").Err()
	if !errors.Is(err, autopipe.ErrAbandoned) {
		t.Fatalf("INCR through a blackhole: %v, want ErrAbandoned", err)
	}
	waitSwallowed(t, fp, before)
	fp.SetBlackhole(false)
	start := time.Now()
	got, err := p.Do(testkit.Context(t, 300*time.Millisecond), "echo", "after").Text()
	took := time.Since(start)
	t.Logf("first call after the heal: %q, %v after %v", got, err, took)
	if err != nil || got != "after" {
		t.Fatalf("ECHO after the heal: %q, %v after %v; want its reply, on a connection of its own", got, err, took)
	}
	if s := p.Stats(); s.InFlight != 1 || s.Overdue != 1 {
		t.Errorf("stats after the heal: %+v, want the stuck batch overdue and still in flight", s)
	}
	select {
	case c := <-late:
		t.Logf("late outcome of the swallowed INCR: %v", c.Err())
	case <-time.After(20 * time.Second):
		t.Fatal("the stuck batch's late callback never came")
	}
}

// TestOverdueCapKeepsOrder: with no overdue batch allowed, the call queued
// behind a stuck batch waits for it — the order of batches holds.
func TestOverdueCapKeepsOrder(t *testing.T) {
	fp, rdb, _ := proxied(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 500*time.Millisecond, -1 })
	p := newPipe(t, rdb, autopipe.WithMaxOverdue(0))
	if err := p.Do(testkit.Context(t, 5*time.Second), "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	before := fp.Discarded()
	fp.SetBlackhole(true)
	p.Do(testkit.Context(t, 30*time.Millisecond), "incr", "swallowed")
	waitSwallowed(t, fp, before)
	fp.SetBlackhole(false)
	err := p.Do(testkit.Context(t, 100*time.Millisecond), "echo", "after").Err()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ECHO behind a stuck batch, no overdue allowed: %v, want deadline exceeded", err)
	}
	if s := p.Stats(); s.Overdue != 0 {
		t.Errorf("stats: %+v, want no overdue batch", s)
	}
}

// TestOverdueAfterFreesTheSlotOfAPatientBatch: a batch whose one call
// would wait 10 s, swallowed by a blackhole, holds up the call queued
// behind it for WithOverdueAfter (200 ms) only — the blackhole healed, the
// next call is answered on another connection long before the patient
// call's deadline — while the patient call still waits for its reply.
func TestOverdueAfterFreesTheSlotOfAPatientBatch(t *testing.T) {
	fp, rdb, _ := proxied(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 30*time.Second, -1 })
	p := newPipe(t, rdb, autopipe.WithOverdueAfter(200*time.Millisecond))
	if err := p.Do(testkit.Context(t, 5*time.Second), "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	before := fp.Discarded()
	fp.SetBlackhole(true)
	patient := make(chan error, 1)
	go func() { patient <- p.Do(testkit.Context(t, 10*time.Second), "incr", "swallowed").Err() }()
	waitStats(t, p, "the patient batch in flight", func(s autopipe.Stats) bool { return s.InFlight == 1 })
	waitSwallowed(t, fp, before)
	fp.SetBlackhole(false)
	start := time.Now()
	got, err := p.Do(testkit.Context(t, 5*time.Second), "echo", "after").Text()
	took := time.Since(start)
	t.Logf("first call after the heal: %q, %v after %v", got, err, took)
	if err != nil || got != "after" {
		t.Fatalf("ECHO after the heal: %q, %v; want its reply", got, err)
	}
	if took > 4*time.Second {
		t.Errorf("ECHO answered after %v; want it sent once the patient batch was in flight 200 ms, not at its 10 s deadline", took)
	}
	select {
	case err := <-patient:
		// Not waited for again below: that would hang the package.
		t.Errorf("the patient call returned %v before its deadline; want it still waiting for the swallowed reply", err)
		return
	default:
	}
	rdb.Close() // ends the patient call's read
	<-patient
}

// waitSwallowed waits until the proxy has discarded the INCR of
// "swallowed" the test wrote after before was read. A call in flight, or
// past its deadline, is not yet a request swallowed: the proxy may not
// have read it, and healing then would let it be answered.
func waitSwallowed(t *testing.T, fp *faultproxy.Proxy, before int64) {
	t.Helper()
	request := int64(len("*2\r\n$4\r\nincr\r\n$9\r\nswallowed\r\n"))
	testkit.Eventually(t, 5*time.Second, "the proxy to swallow the INCR", func() bool { return fp.Discarded()-before >= request })
}
