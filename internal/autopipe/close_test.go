package autopipe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// TestCloseEndsEveryGoroutine: after Close no goroutine of the Pipe is left,
// later calls fail with ErrClosed, and the caller's client still works.
func TestCloseEndsEveryGoroutine(t *testing.T) {
	lab := redislab.Start(t, 1)
	rdb := lab.Clients(t)[0]
	p := autopipe.New(rdb, autopipe.WithMaxInFlight(3))
	ctx := testkit.Context(t, 5*time.Second)
	for range 3 {
		goDo(ctx, p, "ping")
	}
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.Close()
	p.Close() // a second Close is harmless
	noLeftovers(t)
	err := p.Do(ctx, "ping").Err()
	if !errors.Is(err, autopipe.ErrClosed) || !errors.Is(err, autopipe.ErrNotSent) {
		t.Errorf("Do after Close: %v, want ErrClosed and ErrNotSent", err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("PING on the client after Close: %v, want the client still open", err)
	}
}

// TestCloseWaitsForTheBatchInFlight: Close refuses the queued call, lets the
// batch in flight finish with its reply, and waits for a late callback.
func TestCloseWaitsForTheBatchInFlight(t *testing.T) {
	fp, rdb, _ := proxied(t, nil)
	p := autopipe.New(rdb)
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetLatency(0, 300*time.Millisecond)
	inFlight := goDo(ctx, p, "echo", "in flight")
	waitStats(t, p, "a batch in flight", func(s autopipe.Stats) bool { return s.InFlight == 1 })
	lateStarted, release := make(chan struct{}), make(chan struct{})
	gaveUp := make(chan error, 1)
	go func() {
		gaveUp <- p.DoLate(testkit.Context(t, 10*time.Millisecond), func(*redis.Cmd) {
			close(lateStarted)
			<-release
		}, "ping").Err()
	}()
	queued := goDo(ctx, p, "echo", "queued")
	waitStats(t, p, "two calls queued", func(s autopipe.Stats) bool { return s.Queued == 2 })
	if err := <-gaveUp; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call with a 10ms ctx: %v, want deadline exceeded", err)
	}

	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	if err := (<-queued).Err(); !errors.Is(err, autopipe.ErrClosed) {
		t.Errorf("queued call at Close: %v, want ErrClosed", err)
	}
	if got, err := (<-inFlight).Text(); err != nil || got != "in flight" {
		t.Errorf("call in flight at Close: %q, %v; want its reply", got, err)
	}
	<-lateStarted // the ctx-expired call, dropped by Close, still reaches its late callback
	select {
	case <-closed:
		t.Fatalf("Close returned while a late callback was running")
	default:
	}
	close(release)
	<-closed
	fp.Close()
	noLeftovers(t)
}

// TestIdleSenderEnds: a Pipe that is never closed leaves no goroutine once
// idle, and starts a new one for the next call.
func TestIdleSenderEnds(t *testing.T) {
	lab := redislab.Start(t, 1)
	p := newPipe(t, lab.Clients(t)[0], autopipe.WithIdleTimeout(20*time.Millisecond))
	ctx := testkit.Context(t, 5*time.Second)
	for range 2 {
		if err := p.Do(ctx, "ping").Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
		noLeftovers(t)
	}
}

func TestOptionsRefuseNonsense(t *testing.T) {
	for name, f := range map[string]func(){
		"WithMaxInFlight(0)": func() { autopipe.WithMaxInFlight(0) },
		"WithIdleTimeout(0)": func() { autopipe.WithIdleTimeout(0) },
		"New(nil)":           func() { autopipe.New(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}
