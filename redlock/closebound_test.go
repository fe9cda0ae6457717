package redlock_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A waiter in Lock on a key another Client holds, when every master
// freezes (SIGSTOP): its attempts time out, and it subscribes to its
// line's channel on every node — a dial the kernel accepts and a handshake
// no one answers, during which go-redis holds the subscription's lock.
// Close must still return within redlock.CloseBound of the node timeout.
func TestCloseBoundWithWaiterSubscribingToFrozenMasters(t *testing.T) {
	const nodeTimeout = 250 * time.Millisecond
	l := redislab.Start(t, 3)
	l.Trust(t, redlock.TrustStart)
	l.RequireControl(t)
	nodes := l.Clients(t)
	holder := newClient(t, nodes)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := holder.Lock(ctx, "held"); err != nil {
		t.Fatalf("holder: Lock: %v", err)
	}
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(nodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	// Every master answered c once: its connections are pooled, and the
	// subscription's is the one still to set up.
	if _, err := c.TryLock(ctx, "warm"); err != nil {
		t.Fatalf("TryLock before the freeze: %v", err)
	}
	l.Pause(t, 0, 1, 2)
	t.Cleanup(func() { l.Resume(t, 0, 1, 2) })
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "held")
		waiting <- err
	}()
	// The first attempt times out (one node timeout), then the waiter
	// subscribes: wait until its handshakes are under way on every master.
	eventually(t, 10*time.Second, "the waiter's subscriptions dialed", func() bool {
		return subscribing() >= 3
	})
	bound := nodeTimeout + 250*time.Millisecond // the documented bound: the node timeout plus the late window
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	// The margin covers a loaded two-core machine's scheduling delays.
	margin := 500 * time.Millisecond
	select {
	case <-closed:
	case <-time.After(bound + margin + 10*time.Second):
		t.Fatalf("Close has not returned after %v (bound %v)", time.Since(start), bound)
	}
	took := time.Since(start)
	t.Logf("Close took %v (bound %v)", took.Round(time.Millisecond), bound)
	if took > bound+margin {
		t.Errorf("Close took %v with a waiter subscribing to frozen masters, want at most %v + %v", took, bound, margin)
	}
	if err := <-waiting; !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("the waiting Lock returned %v, want ErrClosed", err)
	}
}

// subscribing counts the goroutines inside a SUBSCRIBE of a Client's wakeups:
// setting up the subscription's connection, or waiting for its reply.
func subscribing() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "redlock.(*subscriber).apply") && strings.Contains(g, "(*PubSub).Subscribe") {
			n++
		}
	}
	return n
}
