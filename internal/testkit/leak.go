package testkit

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

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

// Main runs m's tests, then fails the run if any goroutine is left but
// go-redis's own (LeakIgnores): the TestMain of a package whose tests start
// goroutines over a lab. Its examples, which run on real masters, are
// skipped where no redis-server is installed (see
// redislab.SkipExamplesWithoutServer).
func Main(m *testing.M) {
	redislab.SkipExamplesWithoutServer()
	goleak.VerifyTestMain(m, LeakIgnores()...)
}
