package redislab

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// pollEvery is how often Eventually checks its condition.
const pollEvery = 2 * time.Millisecond

// Eventually polls cond until it holds, failing t after d: tests wait for a
// condition with a deadline, never sleep as an assertion.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", d, what)
		}
		time.Sleep(pollEvery)
	}
}

// LeakIgnores are the goroutines that go-redis's own clients run (the idle
// connection reaper, the redial after a refused dial): they belong to the
// redis clients the tests close, not to the code under test. A goleak check
// with these ignores sees everything else.
func LeakIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	}
}
