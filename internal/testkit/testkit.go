package testkit

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeTimeout replaces the library's default node timeout in tests that are
// not about timeouts: the suites run under -race on shared two-core
// machines, where a loopback call can take tens of milliseconds.
const NodeTimeout = 150 * time.Millisecond

// pollEvery is how often Eventually checks its condition.
const pollEvery = 2 * time.Millisecond

// Context returns a context that ends after d, or when t ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond until it holds, failing t after d: tests wait for a
// condition with a deadline, never sleep as an assertion. It must be called
// from the test's goroutine.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(d, cond) {
		t.Fatalf("timed out after %v waiting for: %s", d, what)
	}
}

// Within polls cond until it holds or d has passed, and reports whether it
// held: for a preparation that a test may make again when it did not take
// (Eventually, when it must).
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// Open returns open(nodes, opts...) — a constructor such as redlock.New —
// failing t on its error, and closes the result in t.Cleanup, reporting an
// error of Close. Cleanups run last-registered first: the result is closed
// before the redis clients the test made earlier.
func Open[C io.Closer, O any](t testing.TB, open func([]redis.UniversalClient, ...O) (C, error), nodes []redis.UniversalClient, opts ...O) C {
	t.Helper()
	c, err := open(nodes, opts...)
	if err != nil {
		t.Fatalf("open %T: %v", c, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close %T: %v", c, err)
		}
	})
	return c
}
