package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// waitingCalls are the five calls that wait for a hold, each given a ctx
// without a deadline: only the maximum wait bounds them.
func waitingCalls(c *redlock.Client) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"Lock":     func(ctx context.Context) error { _, err := c.Lock(ctx, "k"); return err },
		"RLock":    func(ctx context.Context) error { _, err := c.RLock(ctx, "k"); return err },
		"LockMany": func(ctx context.Context) error { _, err := c.LockMany(ctx, []string{"a", "b"}); return err },
		"Acquire":  func(ctx context.Context) error { _, err := c.Acquire(ctx, "pool", 2); return err },
		"Do": func(ctx context.Context) error {
			return c.Do(ctx, "k", func(context.Context) error { return nil })
		},
	}
}

// requireAtOnce runs each call and fails t unless it returned within
// quick, with one line starting with "redlock:" that matches
// ErrNotObtained and want, and not context.DeadlineExceeded — a deadline
// the caller never set.
func requireAtOnce(t *testing.T, calls map[string]func(context.Context) error, want error, quick time.Duration) {
	t.Helper()
	for name, call := range calls {
		start := time.Now()
		err := call(context.Background())
		took := time.Since(start)
		switch {
		case took > quick:
			t.Errorf("%s took %v, want at most %v: waiting cannot help (err %v)", name, took.Round(time.Millisecond), quick, err)
		case !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, want):
			t.Errorf("%s = %v, want ErrNotObtained and %v", name, err, want)
		case errors.Is(err, context.DeadlineExceeded):
			t.Errorf("%s = %v, matches a deadline the caller never set", name, err)
		case strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "redlock: "):
			t.Errorf("%s error %q, want one line starting with redlock:", name, err)
		}
	}
}

// Masters that refuse INFO to the user: no grant can ever count, so every
// waiting call returns at once, naming the cause — not after the maximum
// wait with a deadline the caller never set.
func TestUnknownStartEverywhereDoesNotWait(t *testing.T) {
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	ctx := ctxFor(t, 30*time.Second)
	allowAllButInfo(t, ctx, l, 0, 1, 2)
	c := newClient(t, l.Clients(t, asLimited), redlock.WithMaxWait(20*time.Second))
	requireAtOnce(t, waitingCalls(c), redlock.ErrStartUnknown, 5*time.Second)
	_, err := c.Lock(ctx, "k")
	if !strings.Contains(err.Error(), "not retried") || !strings.Contains(err.Error(), "INFO") {
		t.Errorf("Lock error %q does not say why it was not retried", err)
	}
}

// Two of three masters refuse INFO: the third alone can never be a
// majority. One of three refusing leaves a majority: Lock succeeds.
func TestUnknownStartOnAMajorityDoesNotWait(t *testing.T) {
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	ctx := ctxFor(t, 30*time.Second)
	allowAllButInfo(t, ctx, l, 0, 1, 2)
	limited, full := l.Clients(t, asLimited), l.Clients(t)
	c := newClient(t, []redis.UniversalClient{limited[0], limited[1], full[2]}, redlock.WithMaxWait(20*time.Second))
	requireAtOnce(t, waitingCalls(c), redlock.ErrStartUnknown, 5*time.Second)

	ok := newClient(t, []redis.UniversalClient{limited[0], full[1], full[2]})
	held, err := ok.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock with one master refusing INFO: %v", err)
	}
	held.Unlock(ctx)
}

// Two of three nodes are replicas of the third: no majority of masters can
// exist, so waiting cannot help — with restart detection on (the role is
// read with the start) and off (ROLE).
func TestReplicasDoNotWait(t *testing.T) {
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	ctx := ctxFor(t, 30*time.Second)
	direct := l.Clients(t)
	host, port, _ := strings.Cut(l.Nodes[0].Addr(), ":")
	for _, i := range []int{1, 2} {
		if err := direct[i].Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
			t.Fatalf("REPLICAOF on node %d: %v", i, err)
		}
		t.Cleanup(func() { direct[i].Do(context.Background(), "REPLICAOF", "NO", "ONE") })
	}
	for _, opts := range [][]redlock.Option{nil, {redlock.WithRestartGuard(0)}} {
		c := newClient(t, l.Clients(t), append(opts, redlock.WithMaxWait(20*time.Second))...)
		requireAtOnce(t, waitingCalls(c), redlock.ErrReplica, 5*time.Second)
	}
}

// Failures that heal are worth waiting for: with two of three masters
// killed, Lock keeps trying, and gets the key once they are back.
func TestRefusedConnectionsAreWaitedFor(t *testing.T) {
	l := redislab.Start(t, 3)
	l.RequireControl(t)
	l.Trust(t, redlock.TrustStart)
	c := newClient(t, l.Clients(t, failFast), redlock.WithRestartGuard(0))
	ctx := ctxFor(t, 30*time.Second)
	l.Kill(t, 1, 2)
	got := make(chan error, 1)
	go func() {
		held, err := c.Lock(ctx, "k")
		if err == nil {
			err = held.Unlock(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock with two of three masters down returned at once: %v", err)
	case <-time.After(time.Second):
	}
	l.Restart(t, false, 1, 2)
	if err := <-got; err != nil {
		t.Fatalf("Lock after the masters came back: %v", err)
	}
}

// A master whose port is closed is reported with the real cause —
// connection refused — not only as a timeout.
func TestClosedPortNamesItsCause(t *testing.T) {
	l := redislab.Start(t, 1)
	l.Trust(t, redlock.TrustStart)
	dead := []redis.UniversalClient{
		redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"}),
	}
	for _, d := range dead {
		t.Cleanup(func() { d.Close() })
	}
	c := newClient(t, append(l.Clients(t), dead...), redlock.WithNodeTimeout(25*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.Lock(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("Lock = %v, want the caller's deadline and ErrNotObtained", err)
	}
	var q *redlock.QuorumError
	if !errors.As(err, &q) {
		t.Fatalf("Lock = %v, want a *QuorumError", err)
	}
	for _, v := range q.Votes[1:] {
		if !errors.Is(v.Err, syscall.ECONNREFUSED) || !strings.Contains(v.Err.Error(), "connection refused") {
			t.Errorf("node %d (%s): vote error %v, want connection refused", v.Node, v.Addr, v.Err)
		}
	}
}

// An acquisition that stops because its context ended reports it in one
// line starting with "redlock:", matching the context's error,
// ErrNotObtained and the last attempt's *QuorumError; after the maximum
// wait it says so.
func TestStopErrorIsOneLine(t *testing.T) {
	c, _, _ := lab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	held, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer held.Unlock(ctx)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, byCaller := c.Lock(short, "k")
	_, byMaxWait := c.Lock(context.Background(), "k", redlock.WithMaxWait(300*time.Millisecond))
	gone, cancel2 := context.WithCancel(ctx)
	cancel2()
	_, before := c.TryLock(gone, "k")
	for name, tc := range map[string]struct {
		err       error
		want      error
		quorum    bool
		mentioned string
	}{
		"caller's deadline": {byCaller, context.DeadlineExceeded, true, "gave up: context deadline exceeded"},
		"maximum wait":      {byMaxWait, context.DeadlineExceeded, true, "WithMaxWait"},
		"ended before":      {before, context.Canceled, false, "context canceled"},
	} {
		err := tc.err
		var q *redlock.QuorumError
		switch {
		case err == nil:
			t.Errorf("%s: no error", name)
		case strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "redlock: "):
			t.Errorf("%s: error %q, want one line starting with redlock:", name, err)
		case !errors.Is(err, tc.want) || !errors.Is(err, redlock.ErrNotObtained):
			t.Errorf("%s: %v, want %v and ErrNotObtained", name, err, tc.want)
		case errors.As(err, &q) != tc.quorum:
			t.Errorf("%s: errors.As(*QuorumError) = %v, want %v", name, !tc.quorum, tc.quorum)
		case !strings.Contains(err.Error(), tc.mentioned):
			t.Errorf("%s: error %q does not mention %q", name, err, tc.mentioned)
		}
	}
}

// Masters just started, not vouched for: their grants are not counted yet,
// and a Lock that gives up says how long until a majority counts, and how
// to vouch for new masters instead.
func TestYoungMajoritySaysHowLong(t *testing.T) {
	l := redislab.Start(t, 3) // not trusted
	// Masters just started: an outside lab's (REDLOCK_ADDRS) were vouched for.
	l.RequireOwn(t)
	c := newClient(t, l.Clients(t), redlock.WithRestartGuard(time.Minute))
	// First contact done first (each master's start read in full, its
	// node IDs): otherwise Lock's attempts are slow, and the one its
	// deadline cuts — whose votes the error reports — may carry
	// "deadline exceeded" from two of the three masters.
	if _, err := c.TryLock(ctxFor(t, 10*time.Second), "warm-up"); !errors.Is(err, redlock.ErrNodeRestarted) {
		t.Fatalf("TryLock on young masters = %v, want ErrNodeRestarted", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.Lock(ctx, "k")
	if !errors.Is(err, redlock.ErrNodeRestarted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want ErrNodeRestarted after waiting to the deadline", err)
	}
	for _, want := range []string{"a majority counts in", "TrustStart"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// guardVotes is an Observer that counts, once armed, the failed votes
// that match ErrNodeRestarted, and closes seen when they reach want.
type guardVotes struct {
	redlock.NopObserver
	armed atomic.Bool
	n     atomic.Int32
	want  int32
	seen  chan struct{}
}

func (o *guardVotes) NodeFailed(_ context.Context, _, _ string, v redlock.NodeVote) {
	if o.armed.Load() && errors.Is(v.Err, redlock.ErrNodeRestarted) && o.n.Add(1) == o.want {
		close(o.seen)
	}
}

// When Lock's deadline cuts an attempt short, its error reports the
// attempt before, which heard from every master, rather than votes that
// say only "context deadline exceeded": here the young masters' guard,
// and when a majority counts in. Two masters freeze after one whole
// attempt, so the next one is cut by the deadline.
func TestLockCutByItsDeadlineReportsTheWholeAttemptBefore(t *testing.T) {
	l := redislab.Start(t, 3) // not trusted
	l.RequireOwn(t)
	l.RequireControl(t)
	o := &guardVotes{want: 3, seen: make(chan struct{})}
	c := newClient(t, l.Clients(t), redlock.WithRestartGuard(time.Minute), redlock.WithTTL(time.Minute),
		redlock.WithNodeTimeout(10*time.Second), redlock.WithObserver(o))
	if _, err := c.TryLock(ctxFor(t, 20*time.Second), "warm-up"); !errors.Is(err, redlock.ErrNodeRestarted) {
		t.Fatalf("TryLock on young masters = %v, want ErrNodeRestarted", err)
	}
	o.armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "k")
		got <- err
	}()
	select {
	case <-o.seen: // one attempt heard every master
	case <-ctx.Done():
		t.Fatalf("no attempt heard all three masters before the deadline (%d guard votes)", o.n.Load())
	}
	l.Pause(t, 1, 2) // the next attempt waits on them until the deadline
	err := <-got
	if !errors.Is(err, redlock.ErrNodeRestarted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want ErrNodeRestarted after waiting to the deadline", err)
	}
	var q *redlock.QuorumError
	if !errors.As(err, &q) {
		t.Fatalf("Lock = %v, want a *QuorumError", err)
	}
	guard := 0
	for _, v := range q.Votes {
		if errors.Is(v.Err, context.DeadlineExceeded) {
			t.Errorf("node %d's vote = %v, want the attempt before the cut one's", v.Node, v.Err)
		}
		if errors.Is(v.Err, redlock.ErrNodeRestarted) {
			guard++
		}
	}
	if guard < q.Need {
		t.Errorf("%d votes of the guard, want a majority (%d): %v", guard, q.Need, err)
	}
	if !strings.Contains(err.Error(), "a majority counts in") {
		t.Errorf("error %q does not say when a majority counts in", err)
	}
}

// A Do whose lock was lost under fn returns one line starting with
// "redlock:" that matches both ErrLockLost and fn's error — here the
// cancellation of fn's ctx.
func TestDoLossIsOneLine(t *testing.T) {
	l := redislab.Start(t, 3)
	l.RequireControl(t)
	l.Trust(t, redlock.TrustStart)
	c := newClient(t, l.Clients(t, failFast), redlock.WithTTL(900*time.Millisecond))
	ctx := ctxFor(t, 30*time.Second)
	err := c.Do(ctx, "k", func(ctx context.Context) error {
		l.Kill(t, 1, 2)
		<-ctx.Done()
		return ctx.Err()
	})
	switch {
	case !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled):
		t.Errorf("Do = %v, want ErrLockLost and fn's context.Canceled", err)
	case strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "redlock: "):
		t.Errorf("Do error %q, want one line starting with redlock:", err)
	}
}

// Close makes a waiting Lock return at once, with one line matching
// ErrClosed and ErrNotObtained; later calls return ErrClosed without
// waiting.
func TestCloseEndsAWaitInOneLine(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	held, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(context.Background(), "k")
		got <- err
	}()
	eventually(t, 5*time.Second, "the waiter in line", func() bool { return inLine(t, nodes, "k", "") == len(nodes) })
	c.Close()
	select {
	case err := <-got:
		if !errors.Is(err, redlock.ErrClosed) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("waiting Lock after Close = %q, want one line matching ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Lock did not return within 5 s of Close")
	}
	start := time.Now()
	if _, err := c.Lock(context.Background(), "k"); !errors.Is(err, redlock.ErrClosed) || time.Since(start) > time.Second {
		t.Errorf("Lock after Close = %v after %v, want ErrClosed at once", err, time.Since(start))
	}
	if !errors.Is(held.Err(), redlock.ErrClosed) {
		t.Errorf("the held lock's Err after Close = %v, want ErrClosed", held.Err())
	}
}
