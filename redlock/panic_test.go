package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
	"go.uber.org/goleak"
)

// panicky is an Observer whose method named method panics.
type panicky struct {
	redlock.NopObserver
	method string
}

func (p panicky) boom(method string) {
	if p.method == method {
		panic("observer bug in " + method)
	}
}

func (p panicky) AcquireStart(ctx context.Context, _ string, _ bool) context.Context {
	p.boom("AcquireStart")
	return ctx
}
func (p panicky) AcquireDone(context.Context, string, *redlock.Lock, time.Duration, error) {
	p.boom("AcquireDone")
}
func (p panicky) Renewed(context.Context, string, error)                       { p.boom("Renewed") }
func (p panicky) Lost(context.Context, string, error)                          { p.boom("Lost") }
func (p panicky) NodeFailed(context.Context, string, string, redlock.NodeVote) { p.boom("NodeFailed") }

const panicTTL = 900 * time.Millisecond

// An Observer that panics, in any of its methods, leaves nothing behind:
// the call it observed completes, the lock is renewed, lost and released
// as without it, the panic is logged, Close returns, and no goroutine of
// the library is left.
func TestPanickingObserverLeavesNothingBehind(t *testing.T) {
	for _, method := range []string{"AcquireStart", "AcquireDone", "Renewed", "Lost", "NodeFailed"} {
		t.Run(method, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			// Last, once the lab and the redis clients are closed too.
			t.Cleanup(func() { goleak.VerifyNone(t, append(testkit.LeakIgnores(), before)...) })
			l := redislab.Start(t, 3)
			l.RequireControl(t)
			l.Trust(t, redlock.TrustStart)
			nodes := l.Clients(t, failFast)
			var buf testkit.Buffer
			logger := slog.New(slog.NewJSONHandler(&buf, nil))
			if method == "NodeFailed" { // two nodes that fail every call: on the acquisition path
				for i, addr := range []string{"127.0.0.1:1", "127.0.0.1:2"} {
					dead := redis.NewClient(&redis.Options{Addr: addr})
					t.Cleanup(func() { dead.Close() })
					nodes[1+i] = dead
				}
			}
			c, err := redlock.New(nodes, redlock.WithObserver(panicky{method: method}), redlock.WithLogger(logger),
				redlock.WithNodeTimeout(testNodeTimeout), redlock.WithTTL(panicTTL))
			if err != nil {
				t.Fatal(err)
			}
			exercise(t, c, l, nodes, method)
			closed := make(chan struct{})
			go func() { c.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return within 5 s")
			}
			// Lost is told after Done closes, on the expiry timer's goroutine.
			eventually(t, 2*time.Second, "the panic in "+method+" logged", func() bool {
				return strings.Contains(buf.String(), "an Observer panicked") && strings.Contains(buf.String(), `"method":"`+method+`"`)
			})
		})
	}
}

// exercise takes a lock through c with the panicking method, and checks
// that the library's own path completes: the lock is returned and held,
// kept by renewal across several TTLs, then released — or, for Lost, lost
// and signalled; for NodeFailed, attempts with two of three nodes dead
// fail as they should.
func exercise(t *testing.T, c *redlock.Client, l *redislab.Lab, nodes []redis.UniversalClient, method string) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	if method == "NodeFailed" {
		for range 3 {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("TryLock panicked: %v", r)
					}
				}()
				if _, err := c.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
					t.Errorf("TryLock with two of three nodes dead = %v, want ErrNotObtained", err)
				}
			}()
		}
		return
	}
	var held *redlock.Lock
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Lock panicked: %v", r)
			}
		}()
		var err error
		held, err = c.Lock(ctx, "k")
		if err != nil {
			t.Errorf("Lock: %v", err)
		}
	}()
	if held == nil {
		// Nobody has a handle to a lock the panic may have left: it must
		// not be renewed beyond its TTL.
		time.Sleep(3 * panicTTL)
		if n := countHeld(t, nodes, "k"); n > 0 {
			t.Errorf("a lock nobody holds a handle to is still on %d nodes after 3 TTLs", n)
		}
		return
	}
	if method == "Lost" {
		l.Kill(t, 1, 2)
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the lock was not signalled lost with a majority killed")
		}
		if !errors.Is(held.Err(), redlock.ErrLockLost) {
			t.Errorf("Err = %v, want ErrLockLost", held.Err())
		}
		return
	}
	time.Sleep(3 * panicTTL) // several renewals
	if err := held.Err(); err != nil {
		t.Errorf("after 3 TTLs the lock ended: %v", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	eventually(t, 2*time.Second, "the key released everywhere it was held", func() bool {
		return countHeld(t, nodes[:2], "k") == 0
	})
}

// Without WithLogger, an Observer's panic is logged through slog.Default().
func TestPanickingObserverWithoutLoggerUsesDefault(t *testing.T) {
	var buf testkit.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	c, _, _ := lab(t, 3, redlock.WithObserver(panicky{method: "AcquireDone"}))
	ctx := ctxFor(t, 10*time.Second)
	held, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	if got := buf.String(); !strings.Contains(got, `"level":"ERROR","msg":"redlock: an Observer panicked`) || !strings.Contains(got, "observer bug in AcquireDone") {
		t.Errorf("slog.Default() got %q, want the recovered panic at Error", got)
	}
}
