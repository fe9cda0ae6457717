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

// LeakIgnores are the goroutines that go-redis's own clients run.
//
// Deprecated: use testkit.LeakIgnores, or testkit.Main in TestMain.
func LeakIgnores() []goleak.Option { return testkit.LeakIgnores() }
