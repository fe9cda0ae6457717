package redlocktest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine is left when the tests end but
// go-redis's own (its idle-connection reaper and the redial after a refused
// dial, which belong to the clients, closed with the Clusters).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)
}
