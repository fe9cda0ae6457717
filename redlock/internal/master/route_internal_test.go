package master

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// A batch on the library's dedicated client is read until its calls' latest
// deadline plus the late window, however short the client's fixed socket
// bound: a master that answers after the bound (500 ms at a 25 ms node
// timeout) but well before the call's own deadline — as the watchdog's
// calls allow, on a host short of CPU — still answers it. Issue 25: batches
// of renewals were cut whole at the bound, "i/o timeout", and the locks
// lost.
func TestDedicatedBatchReadUntilItsCallsDeadline(t *testing.T) {
	const nodeTimeout = 25 * time.Millisecond
	lab := redislab.Start(t, 1)
	lab.RequireControl(t)
	nd := New(lab.Clients(t)[0], nodeTimeout)
	t.Cleanup(nd.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := nd.Call(ctx, "ping").Err(); err != nil {
		t.Fatalf("a call to the running master: %v", err)
	}
	bound := SocketBound(nodeTimeout)
	lab.Pause(t, 0)
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(3 * bound) // the master's stall, not an assertion
		lab.Resume(t, 0)
	}()
	callCtx, callCancel := context.WithTimeout(ctx, 20*bound)
	defer callCancel()
	start := time.Now()
	err := nd.Call(callCtx, "ping").Err()
	took := time.Since(start)
	<-resumed
	if err != nil {
		t.Fatalf("a call with %v to go, to a master stalled for %v: %v after %v; want its answer", 20*bound, 3*bound, err, took)
	}
	t.Logf("answered after %v (socket bound %v)", took.Round(time.Millisecond), bound)
}

// A call with no deadline of its own on the library's dedicated client is still
// bounded, by the socket bound plus the late window: a frozen master never
// holds it for good.
func TestDedicatedCallWithoutDeadlineIsBounded(t *testing.T) {
	const nodeTimeout = 25 * time.Millisecond
	lab := redislab.Start(t, 1)
	lab.RequireControl(t)
	nd := New(lab.Clients(t)[0], nodeTimeout)
	t.Cleanup(nd.Close)
	if err := nd.Call(context.Background(), "ping").Err(); err != nil {
		t.Fatalf("a call to the running master: %v", err)
	}
	lab.Pause(t, 0)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- nd.Call(context.Background(), "ping").Err() }()
	select {
	case err := <-done:
		t.Logf("gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
		if err == nil {
			t.Fatal("a frozen master answered")
		}
	case <-time.After(20 * SocketBound(nodeTimeout)):
		lab.Resume(t, 0)
		<-done
		t.Fatalf("a call without deadline to a frozen master still waits after %v; want it cut near %v", 20*SocketBound(nodeTimeout), SocketBound(nodeTimeout))
	}
}
