package testkit

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// LeakIgnores are the goroutines that go-redis's own clients run (the idle
// connection reaper, the redial after a refused dial, the maintenance
// notifications' cleanup, which a client runs from NewClient until its first
// handshake finds the server without them): they belong to the redis clients
// the tests close, not to the code under test — the library talks through
// clients of its own, and leaves the tests' unused. A goleak check with
// these ignores sees everything else.
func LeakIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/maintnotifications.(*CircuitBreakerManager).cleanupLoop"),
	}
}

// Main runs m's tests, then fails the run if any goroutine is left but
// go-redis's own (LeakIgnores): the TestMain of a package whose tests start
// goroutines over a lab. go-redis's log is silenced (QuietRedis; REDIS_LOG=1
// keeps it). Its examples, which run on real masters, are skipped where no
// redis-server is installed (see redislab.SkipExamplesWithoutServer).
func Main(m *testing.M) {
	QuietRedis()
	redislab.SkipExamplesWithoutServer()
	goleak.VerifyTestMain(m, LeakIgnores()...)
}
