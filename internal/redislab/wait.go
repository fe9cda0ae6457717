package redislab

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// Eventually polls cond until it holds, failing t after d.
//
// Deprecated: use testkit.Eventually, which the tests of every package share.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, d, what, cond)
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
